"""The fabric overview at 5,000, 20,000 and 50,000 ports: server time and queries per page, and in Chromium
the time until the grid is drawn and the problem list is usable.

    eval "$(scripts/test-services start)"     # only for --db postgres
    .venv/bin/python bench/bench_dashboard.py [--ports 5000,20000,50000] [--db sqlite|postgres] [--no-browser]

Each size runs in a child process with a fresh database: a simulated fabric (4 ports per node: 2 HCAs x 2
ports; a simulated block of 1,000 ports copied under other node names) with faults on 1% of the nodes
(down, trained at 1X, QDR where HDR is expected) is stored through the real ingest (ingest_batch, 100
snapshots per transaction, the health engine included), 2 polls.
Server: the overview rendered by Django's test client in this process, median of 5 after one warm-up, and
its query count. Browser: gunicorn (1 worker) serves the same database; Debian's Chromium loads the
overview, logged in; the figure is the time from navigation start until the first frame after the load
event, with every grid cell and the problem list in the DOM. Goals at 20,000 ports: under 300 ms on the
server with a constant number of queries, under 2 s in the browser.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SERVER_GOAL_MS, BROWSER_GOAL_MS = 300.0, 2000.0
PORTS_PER_NODE = 4
BLOCK_PORTS = 1000
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


def _server(runs: int = 5) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user, _ = get_user_model().objects.get_or_create(username="bench")
    client = Client()
    client.force_login(user)
    response = client.get("/")
    assert response.status_code == 200, response.status_code
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        response = client.get("/")
        times.append((time.perf_counter() - began) * 1000)
    with CaptureQueriesContext(connection) as seen:
        client.get("/")
    return {
        "server_ms": statistics.median(times),
        "server_range": (min(times), max(times)),
        "queries": len(seen),
        "html_bytes": len(response.content),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _browser(expected_cells: int) -> dict:
    from django.contrib.auth import get_user_model
    from playwright.sync_api import sync_playwright

    user = get_user_model().objects.get(username="bench")
    user.set_password("bench-password-123")
    user.save()
    port = _free_port()
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
            figures = []
            for _ in range(3):
                page.goto(f"{base}/", wait_until="load")
                ms = page.evaluate(
                    "() => new Promise(done => requestAnimationFrame(() => setTimeout(() => done(performance.now()))))"
                )
                cells = page.locator(".grid a.c").count()
                assert cells == expected_cells, (cells, expected_cells)
                assert page.locator(".problems li").count() > 0
                figures.append(ms)
            browser.close()
        return {"browser_ms": statistics.median(figures), "browser_range": (min(figures), max(figures))}
    finally:
        server.terminate()
        server.wait(30)


def _profile(top: int = 25) -> None:
    """cProfile of one more GET of the overview, the costliest functions (cumulative) to stderr."""
    import cProfile
    import pstats

    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    profiler = cProfile.Profile()
    profiler.runcall(client.get, "/")
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(top)


def child(ports: int, db: str, browser: bool, profile: bool = False) -> dict:
    with tempfile.TemporaryDirectory(
        prefix="bench-dash-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    ) as scratch:
        _setup(db, scratch)
        stored_s = _store_fabric(ports, scratch)
        if db == "postgres":
            # As autovacuum leaves the tables between polls: measured during its first pass, the page
            # time varied by 1.5x from run to run.
            from django.db import connection

            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        from fabricweb.inventory.models import Port

        result = {"ports": Port.objects.count(), "db": db, "store_s": stored_s, **_server()}
        if profile:
            _profile()
        if browser:
            result.update(_browser(result["ports"]))
        return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ports", default="5000,20000,50000")
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--profile", action="store_true", help="print a cProfile of one overview GET per size")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.db, not args.no_browser, args.profile)))
        return 0
    goals = f"server < {SERVER_GOAL_MS:g} ms, browser < {BROWSER_GOAL_MS:g} ms"
    print(f"overview page, {args.db}; goals at 20,000 ports: {goals}")
    heads = ("ports", "server ms", "vs goal", "queries", "HTML KiB", "browser ms", "vs goal")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (7, 10, 8, 8, 9, 11, 8), strict=True)))
    for size in (int(s) for s in args.ports.split(",")):
        argv = [sys.executable, __file__, "--child", str(size), "--db", args.db]
        argv += ["--no-browser"] if args.no_browser else []
        argv += ["--profile"] if args.profile else []
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
        if args.profile:
            print(done.stderr, file=sys.stderr)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        browser = r.get("browser_ms")
        print(
            f"{r['ports']:>7} {r['server_ms']:>10.0f} {r['server_ms'] / SERVER_GOAL_MS:>7.2f}x {r['queries']:>8}"
            f" {r['html_bytes'] / 1024:>9.0f} {browser or float('nan'):>11.0f}"
            f" {(browser or float('nan')) / BROWSER_GOAL_MS:>7.2f}x   (stored in {r['store_s']:.0f} s)"
        )
        # The machine may be shared: the spread, the load and the memory say how far to trust the medians.
        spread = f"server min-max {r['server_range'][0]:.0f}-{r['server_range'][1]:.0f} ms"
        if browser:
            spread += f", browser min-max {r['browser_range'][0]:.0f}-{r['browser_range'][1]:.0f} ms"
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
        print(f"        {spread}; load average {load}; peak RSS {peak_mib:.0f} MiB (largest process so far)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
