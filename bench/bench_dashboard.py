"""The fabric overview at 5,000, 20,000 and 50,000 ports: server time and queries per page, and in Chromium
the time until the grid is drawn and the problem list is usable; as a user measures it.

    eval "$(scripts/test-services start)"     # only for --db postgres
    .venv/bin/python bench/bench_dashboard.py [--ports 5000,20000,50000] [--db sqlite|postgres] [--runs 5]
        [--no-browser] [--profile] [--switches N --switch-ports P]
    .venv/bin/python bench/bench_dashboard.py --db postgres --ports 32000 --switches 1000 --switch-ports 64
        # the 100,000-port fabric of bench/bench_scale.py: 32,000 host ports beside 64,000 switch ports

Each size runs in a child process with a fresh database: a simulated fabric (4 ports per node: 2 HCAs x 2
ports; a simulated block of 1,000 ports copied under other node names) with faults on 1% of the nodes
(down, trained at 1X, QDR where HDR is expected) is stored through the real ingest (ingest_batch, 100
snapshots per transaction, the health engine included), 2 polls.
A/B, alternated in one run (A, B, A, B...: the machine's load changes, both see the same): A is the first GET
after a poll, B a GET between polls. The page keeps its counts and grid per process until the data changes
(fabricweb/dashboard/overviewmodel.py); before A the bench writes what a stored batch writes for it (a host's
last_ingested_at), so A builds them again, as every worker does once per poll.
Server: the overview rendered by Django's test client in the child, `--runs` GETs of each of A and B after one
warm-up, and the query count of each. Browser: gunicorn (1 worker) serves the same database; Debian's
Chromium loads the overview, logged in, `--runs` times each of A and B, and of B with the stylesheet's
content-visibility rule taken out (every host block drawn at load: the grid before that rule); the figure
is the time from navigation start until the first frame after the load event, with every grid cell and the
problem list in the DOM. Printed: min / median / max of each, the load average before and after each size, and the peak
RSS (VmHWM from /proc) of the child during its GETs (reset after storing the fabric) and of the gunicorn
worker. Goals at 20,000 ports: under 300 ms on the server with a constant number of queries, under 2 s in
the browser; 50,000 ports under 500 ms on the server.

With --switches, a two-level fat tree of that many switches is cabled to the hosts' ports as fabric ingest
leaves it (bench_metrics.fill_switches: switch ports with their counters, both ends of every link), and the
fabric page `/fabric/` and a leaf's page `/switches/<name>/` are timed on the server too, `--runs` GETs each
after one warm-up. Goals at 100,000 ports (32,000 host ports, 64,000 switch ports): the overview under
500 ms on the server and 2.5 s in Chromium, the fabric page and a switch page under 500 ms.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from harness import free_port  # noqa: E402

SERVER_GOAL_MS, BROWSER_GOAL_MS = 300.0, 2000.0
PAGE_GOAL_MS = 500.0  # the fabric page and a switch page at 100,000 ports
PORTS_PER_NODE = 4
BLOCK_PORTS = 1000
# performance.now() at the first frame after the load event.
FIRST_FRAME = "() => new Promise(done => requestAnimationFrame(() => setTimeout(() => done(performance.now()))))"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def _setup(db: str, scratch: str) -> None:
    os.environ.update(
        SECRET_KEY="bench-only-" + "x" * 50,
        DJANGO_SETTINGS_MODULE="fabricweb.settings",
        # Plain HTTP on loopback for the browser: DEBUG=1 (as `make demo`), no HTTPS redirect or Secure cookies.
        DEBUG="1",
        ALLOWED_HOSTS="127.0.0.1,testserver",
        LOG_LEVEL="WARNING",
    )
    if db == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{os.path.join(scratch, 'bench.sqlite3')}"
    else:
        import psycopg

        base = os.environ.get("TEST_POSTGRES_URL") or sys.exit(
            'TEST_POSTGRES_URL is not set: eval "$(scripts/test-services start)"'
        )
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS fabric_bench_dashboard")
            conn.execute("CREATE DATABASE fabric_bench_dashboard")
        os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + "/fabric_bench_dashboard"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _store_fabric(ports: int, scratch: str) -> float:
    from django.utils import timezone

    from collectors import read_host, to_dict
    from collectors.sim import Fabric
    from fabricweb.telemetry.ingest import ingest_batch

    # A simulated block of up to 1,000 ports, its snapshots copied under other node names up to `ports`:
    # a 50,000-port tree would be ~3 million files (more than a tmpfs holds, minutes to write on disk).
    nodes = min(ports, BLOCK_PORTS) // PORTS_PER_NODE
    copies = max(1, ports // (nodes * PORTS_PER_NODE))
    out = os.path.join(scratch, "sim")
    fabric = Fabric.open(out, nodes, 2, seed=1, hcas=2, fresh=True)
    names = sorted(d for d in os.listdir(out) if d.startswith("cn"))
    start = timezone.now().timestamp() - 30
    began = time.perf_counter()
    for poll in range(2):
        if poll == 1:
            faults = []
            for i, name in enumerate(names[::100]):
                kind = ("down", "width=1X", "speed=QDR")[i % 3]
                device = sorted(os.listdir(os.path.join(out, name, "class", "infiniband")))[0]
                faults.append(f"{name}/{device}/1:{kind}")
            fabric.add_fault(*faults)
        fabric.step(10.0)
        now = start + fabric.clock
        block = [to_dict(read_host(os.path.join(out, n), host=n, use_verbs=False, now=now)) for n in names]
        snaps = [{**copy.deepcopy(snap), "host": f"{snap['host']}-{k:03d}"} for k in range(copies) for snap in block]
        for i in range(0, len(snaps), 100):
            ingest_batch(snaps[i : i + 100])
    return time.perf_counter() - began


def _proc_kib(field: str, pid: str = "self") -> int:
    """A /proc/PID/status figure in KiB (VmHWM: the peak resident set; VmRSS: now)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak() -> None:
    """VmHWM back to the current RSS (Linux: 5 > /proc/self/clear_refs): the peak of what follows alone."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _new_poll() -> None:
    """What a stored batch changes for the overview's model: a host's last_ingested_at (one row, as
    ingest writes it). The next GET builds the model again, as the first GET after each poll does."""
    from django.utils import timezone

    from fabricweb.inventory.models import Node

    node = Node.objects.filter(kind=Node.Kind.HOST).order_by("pk").first()
    Node.objects.filter(pk=node.pk).update(last_ingested_at=timezone.now())


def _timed_get(client, path: str = "/") -> float:
    began = time.perf_counter()
    response = client.get(path)
    ms = (time.perf_counter() - began) * 1000
    assert response.status_code == 200, response.status_code
    return ms


def _server(runs: int) -> dict:
    """A/B alternated, `runs` GETs each: A the first GET after a poll (the model built), B a GET between
    polls (the model kept). The load changes during a run: alternating puts both under the same."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user, _ = get_user_model().objects.get_or_create(username="bench")
    client = Client()
    client.force_login(user)
    client.get("/")  # warm-up: templates, URL resolver, the first connection
    _reset_peak()
    rss_before = _proc_kib("VmRSS")  # what storing the fabric left in this process
    built, kept = [], []
    for _ in range(runs):
        _new_poll()
        built.append(_timed_get(client))
        kept.append(_timed_get(client))
    _new_poll()
    with CaptureQueriesContext(connection) as cold:
        response = client.get("/")
    with CaptureQueriesContext(connection) as warm:
        client.get("/")
    return {
        "server_built_ms": built,
        "server_kept_ms": kept,
        "queries_built": len(cold),
        "queries_kept": len(warm),
        "html_bytes": len(response.content),
        "server_peak_kib": _proc_kib("VmHWM"),
        "server_rss_before_kib": rss_before,
    }


def _browser(expected_cells: int, runs: int) -> dict:
    from django.contrib.auth import get_user_model
    from playwright.sync_api import sync_playwright

    user = get_user_model().objects.get(username="bench")
    user.set_password("bench-password-123")
    user.save()
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "fabricweb.wsgi",
        "-b",
        f"127.0.0.1:{port}",
        "-w",
        "1",
        "--timeout",
        "120",
    ]
    server = subprocess.Popen(
        argv, cwd=REPO, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("gunicorn did not start") from None
                time.sleep(0.2)
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{base}/login/")
            page.fill("input[name=username]", "bench")
            page.fill("input[name=password]", "bench-password-123")
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            # The third: B with the stylesheet's content-visibility rule taken out (every host block drawn
            # at load, as before it). Every load goes through the route, so none has the HTTP cache.
            strip = {"on": False}

            def stylesheet(route):
                if not strip["on"]:
                    return route.continue_()
                response = route.fetch()
                kept = [line for line in response.text().splitlines() if "content-visibility" not in line]
                return route.fulfill(response=response, body="\n".join(kept))

            page.route("**/static/dashboard/dashboard.css", stylesheet)
            figures: dict[str, list[float]] = {"browser_built_ms": [], "browser_kept_ms": [], "browser_drawn_ms": []}
            for _ in range(runs):  # A/B alternated, as on the server
                for key in figures:
                    if key == "browser_built_ms":
                        _new_poll()
                    strip["on"] = key == "browser_drawn_ms"
                    page.goto(f"{base}/", wait_until="load")
                    ms = page.evaluate(FIRST_FRAME)
                    cells = page.locator(".grid a.c").count()
                    assert cells == expected_cells, (cells, expected_cells)
                    assert page.locator(".problems li").count() > 0
                    figures[key].append(ms)
            browser.close()
        workers = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        return {**figures, "gunicorn_peak_kib": max(_proc_kib("VmHWM", pid) for pid in workers)}
    finally:
        server.terminate()
        server.wait(30)


def _profile(top: int = 25) -> None:
    """cProfile of one more GET of the overview after a poll (A: the model built), the costliest functions
    (cumulative) to stderr."""
    import cProfile
    import pstats

    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    _new_poll()
    profiler = cProfile.Profile()
    profiler.runcall(client.get, "/")
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(top)


def _switch_pages(runs: int) -> dict:
    """`runs` GETs of the fabric page and of the first leaf's page, after one warm-up GET of each."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    out = {}
    for key, path in (("fabric_ms", "/fabric/"), ("switch_ms", "/switches/sw00000/")):
        _timed_get(client, path)
        out[key] = [_timed_get(client, path) for _ in range(runs)]
    return out


def child(
    ports: int, db: str, browser: bool, runs: int, profile: bool = False, switches: int = 0, switch_ports: int = 40
) -> dict:
    with tempfile.TemporaryDirectory(
        prefix="bench-dash-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    ) as scratch:
        _setup(db, scratch)
        stored_s = _store_fabric(ports, scratch)
        if switches:
            from bench_metrics import fill_switches  # the bench's fat tree, as fabric ingest leaves it

            fill_switches(switches, switch_ports)
        if db == "postgres":
            # As autovacuum leaves the tables between polls: measured during its first pass, the page
            # time varied by 1.5x from run to run.
            from django.db import connection

            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        from fabricweb.inventory.models import Node, Port

        hosts = Port.objects.filter(device__node__kind=Node.Kind.HOST).count()
        result = {"ports": hosts, "db": db, "store_s": stored_s, **_server(runs)}
        if switches:
            result["switch_ports"] = Port.objects.filter(device__node__kind=Node.Kind.SWITCH).count()
            result.update(_switch_pages(runs))
        if profile:
            _profile()
        if browser:
            result.update(_browser(result["ports"], runs))
        return result


def _load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def _figure(name: str, values: list[float], goal: float) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return (
        f"  {name:<44} min / median / max {low:>6.0f} / {mid:>6.0f} / {high:>6.0f} ms"
        f"  (median {mid / goal:.2f}x the goal, {len(values)} runs)"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ports", default="5000,20000,50000", help="sizes, comma-separated")
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--runs", type=int, default=5, help="GETs (and page loads) of each of A and B (at least 5)")
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--profile", action="store_true", help="print a cProfile of one overview GET per size")
    p.add_argument("--switches", type=int, default=0, help="also a fat tree of this many switches")
    p.add_argument("--switch-ports", type=int, default=40, help="ports per switch (default 40)")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.runs < 5:
        p.error("--runs: at least 5")
    if args.child:
        result = child(
            args.child, args.db, not args.no_browser, args.runs, args.profile, args.switches, args.switch_ports
        )
        print(json.dumps(result))
        return 0
    print(
        f"overview page `/`, {args.db}, {os.cpu_count()} CPUs; goals at 20,000 ports: server < {SERVER_GOAL_MS:g} ms,"
    )
    print(f"Chromium < {BROWSER_GOAL_MS:g} ms. A and B alternated in each run: A the first GET after a poll (the")
    print("counts and grid built again), B a GET between polls (the model this process kept).")
    for size in (int(s) for s in args.ports.split(",")):
        argv = [sys.executable, __file__, "--child", str(size), "--db", args.db, "--runs", str(args.runs)]
        argv += ["--no-browser"] if args.no_browser else []
        argv += ["--profile"] if args.profile else []
        argv += ["--switches", str(args.switches), "--switch-ports", str(args.switch_ports)] if args.switches else []
        load_before = _load()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
        load_after = _load()
        if args.profile:
            print(done.stderr, file=sys.stderr)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        beside = f" beside {r['switch_ports']:,} switch ports" if "switch_ports" in r else ""
        print(
            f"{r['ports']:,} host ports{beside} (stored in {r['store_s']:.0f} s);"
            f" load average (1 / 5 / 15 min) {load_before}"
            f" before, {load_after} after; queries A {r['queries_built']}, B {r['queries_kept']};"
            f" HTML {r['html_bytes'] / 1024:,.0f} KiB"
        )
        print(_figure("server, A: after a poll (model built)", r["server_built_ms"], SERVER_GOAL_MS))
        print(_figure("server, B: between polls (model kept)", r["server_kept_ms"], SERVER_GOAL_MS))
        if "fabric_ms" in r:
            print(_figure("server: the fabric page /fabric/", r["fabric_ms"], PAGE_GOAL_MS))
            print(_figure("server: a leaf's page /switches/sw00000/", r["switch_ms"], PAGE_GOAL_MS))
        if "browser_built_ms" in r:
            print(_figure("Chromium, A: after a poll (model built)", r["browser_built_ms"], BROWSER_GOAL_MS))
            print(_figure("Chromium, B: between polls (model kept)", r["browser_kept_ms"], BROWSER_GOAL_MS))
            print(_figure("Chromium, B without content-visibility", r["browser_drawn_ms"], BROWSER_GOAL_MS))
        peaks = (
            f"the bench's process during the GETs {r['server_peak_kib'] / 1024:,.0f} MiB"
            f" ({r['server_rss_before_kib'] / 1024:,.0f} MiB before them, what storing the fabric left)"
        )
        if "gunicorn_peak_kib" in r:
            peaks += f", the gunicorn worker serving Chromium {r['gunicorn_peak_kib'] / 1024:,.0f} MiB"
        print(f"  peak RSS (VmHWM from /proc): {peaks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
