"""Cost of /metrics as Prometheus sees it: a fresh web process, the whole HTTP response, first and warm scrapes.

    eval "$(scripts/test-services start)"     # for --db postgres
    .venv/bin/python bench/bench_metrics.py [--db sqlite|postgres] [--ports 5000 20000 50000] [--runs 5]
    .venv/bin/python bench/bench_metrics.py --ports 20000 --switches 500 --switch-ports 40   # and a switch fabric
    .venv/bin/python bench/bench_metrics.py --db postgres --ports 32000 --switches 1000 --switch-ports 64 \
        --sets health counters --shard 1/4 --served --against /tmp/base   # a shard's own process at 100,000 ports

For each size and set (`all`, the default scrape, and `health`), --runs times: start a fresh gunicorn
(one sync worker, as deploy/ runs it) on the filled database, GET /metrics?set=... over HTTP and read
the body to its end (the first scrape of the process: nothing kept yet), then --warm GETs more (warm:
the label texts and health rows kept). Prints min / median / max of the first and of the warm
scrapes, the body's samples and bytes and series per host port, the worker's peak RSS (VmHWM from
/proc, after its scrapes) and the load average before and after each size: machines differ, and a
busy one is slower, so each figure carries its load.

With --switches, the hosts' ports are cabled to a two-level fat tree of that many switches (two
thirds leaves, half their ports down to hosts and half up to the spines; the rest spines) as fabric
ingest leaves it: switch ports with a PMA's counters (64-bit data and packets, distinct traffic per
port), both ends' link facts (far end, what both ends support, the end that speaks for the link),
each switch's fabric row; `set=counters` and `set=detail` are measured too.

Goals, at 20,000 ports: the default scrape in under 1 s, `set=health` in under 200 ms, peak
RSS under 250 MB. The tables are filled directly (bulk_create) with the counters of a real simulated
ConnectX-6 port (30 counters, 24 hw_counters each), its non-zero counters made distinct per port as on
a real fabric (12 a port: traffic, packets, RDMA requests), 8 ports per node, an open event on one port
in 50. The nodes' last ingest is set to now before each GET (a slow scrape must not find them stale).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from harness import free_port  # noqa: E402

PORTS_PER_NODE = 8  # 4 HCAs of 2 ports
# What every server is started with besides the database (--served: the shard it serves).
SERVER_ENV: dict[str, str] = {}
FORMATS = {"text": "", "openmetrics": "application/openmetrics-text;version=1.0.0"}
# A switch's series, a fabric collector's and a link's a switch port speaks for: counted per switch port; the
# rest (the hosts', a link's a host's port speaks for) per host port (tests/exporter/test_exporter_series_budget.py).
SWITCH_SIDE = re.compile(rb'[{,](?:switch|collector)="|[{,]type="(?!host")')


def sample_port() -> dict:
    """One simulated ConnectX-6 port as the snapshot carries it (counters in bytes, hw_counters)."""
    from collectors import read_host, to_dict
    from collectors.sim import Fabric

    out = tempfile.mkdtemp(prefix="bench-metrics-")
    try:
        Fabric.create(out, 1).step(10.0)
        snap = to_dict(read_host(os.path.join(out, "cn001"), host="cn001", use_verbs=False))
        return snap["devices"][0]["ports"][0]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def distinct(counters: dict, i: int) -> dict:
    """`counters` of the i-th port: every non-zero count its own, as no two busy ports agree."""
    return {name: value + i if value else value for name, value in counters.items()}


def fill(ports: int, port: dict) -> None:
    from django.utils import timezone

    from fabricweb.health.models import Event
    from fabricweb.inventory import readings
    from fabricweb.inventory.models import Device, Node, NodeHwReadings, NodeReadings, Port

    Event.objects.all().delete()
    Node.objects.all().delete()
    now = timezone.now()
    nodes = Node.objects.bulk_create(
        Node(name=f"cn{i:05d}", first_seen_at=now, last_collected_at=now, last_ingested_at=now)
        for i in range(ports // PORTS_PER_NODE)
    )
    devices = Device.objects.bulk_create(
        Device(
            node=n,
            name=f"mlx5_{d}",
            node_type_id=1,
            node_type_name="CA",
            fw_ver="20.31.1014",
            hca_type="MT4123",
            board_id="MT_0000000223",
            pci_current_gts=16.0,
            pci_current_width=16,
            pci_max_gts=16.0,
            pci_max_width=16,
            first_seen_at=now,
        )
        for n in nodes
        for d in range(PORTS_PER_NODE // 2)
    )
    rows = Port.objects.bulk_create(
        (
            Port(
                device=dev,
                number=p,
                state_id=4,
                state_name="ACTIVE",
                phys_state_id=5,
                phys_state_name="LinkUp",
                link_layer="InfiniBand",
                rate_gbps=200.0,
                lanes=4,
                speed="HDR",
                counters=distinct(port["counters"], i),
                counters_ext=distinct(port["counters_ext"], i),
                hw_counters=distinct(port["hw_counters"], i),
                last_collected_at=now,
                expected_speed="HDR",
                expected_lanes=4,
                expected_source="learned from this port's history",
                first_seen_at=now,
            )
            for i, (dev, p) in enumerate((dev, p) for dev in devices for p in (1, 2))
        ),
        batch_size=2000,
    )
    by_node: dict[int, list] = {}
    for r in rows:  # counters, counters_ext, hw_counters and last_collected_at are stored per node
        by_node.setdefault(r.device.node_id, []).append(r)
    NodeReadings.objects.bulk_create(
        (NodeReadings(node_id=n, **readings.encode(ports)) for n, ports in by_node.items()), batch_size=2000
    )
    NodeHwReadings.objects.bulk_create(
        (NodeHwReadings(readings_id=n, hw_counters=readings.encode_hw(ports)) for n, ports in by_node.items()),
        batch_size=2000,
    )
    Event.objects.bulk_create(
        Event(
            node=r.device.node,
            device=r.device,
            port=r,
            kind="symbol_errors",
            severity="warning",
            key=f"symbol_errors:{r.pk}",
            message="bench",
            opened_at=now,
            updated_at=now,
        )
        for r in rows[::50]
    )


def fill_switches(switches: int, ports_per_switch: int) -> int:
    """A fat tree of `switches` switches over the hosts' ports already filled; returns its switch ports."""
    from django.utils import timezone

    from collectors.facts import SWITCH_DEVICE
    from fabricweb.fabric.models import FabricNode
    from fabricweb.inventory import readings
    from fabricweb.inventory.models import Device, Node, NodeHwReadings, NodeReadings, Port

    FabricNode.objects.all().delete()  # fill() deleted their nodes
    now = timezone.now()
    leaves = switches * 2 // 3
    nodes = Node.objects.bulk_create(
        Node(
            name=f"sw{i:05d}",
            kind=Node.Kind.SWITCH,
            guid=f"0x{0xB8599F0300000000 + i:016x}",
            first_seen_at=now,
            last_collected_at=now,
            last_ingested_at=now,
        )
        for i in range(switches)
    )
    FabricNode.objects.bulk_create(
        FabricNode(
            guid=n.guid,
            node_type=2,
            num_ports=ports_per_switch,
            description=f"MF0;{n.name}:MQM8790-HS2F/U1",
            lid=i + 1,
            node=n,
            first_seen_at=now,
        )
        for i, n in enumerate(nodes)
    )
    devices = Device.objects.bulk_create(
        Device(node=n, name=SWITCH_DEVICE, node_type_id=2, node_type_name="switch", node_guid=n.guid, first_seen_at=now)
        for n in nodes
    )
    pma = {name: 0 for name in (
        "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors",
        "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
        "VL15_dropped",
    )}  # fmt: skip
    traffic = {"port_xmit_wait": 3_100_000, "unicast_xmit_packets": 9_400_000_000, "unicast_rcv_packets": 9_300_000_000,
               "multicast_xmit_packets": 51_000, "multicast_rcv_packets": 48_000}  # fmt: skip
    ext = {"port_xmit_data_64": 38_000_000_000_000, "port_rcv_data_64": 37_000_000_000_000,
           "port_xmit_packets_64": 9_400_051_000, "port_rcv_packets_64": 9_300_048_000}  # fmt: skip
    ports = [
        Port(
            device=dev,
            number=p,
            state_id=4,
            state_name="ACTIVE",
            phys_state_id=5,
            phys_state_name="LinkUp",
            link_layer="InfiniBand",
            rate_gbps=200.0,
            lanes=4,
            speed="HDR",
            expected_speed="HDR",
            expected_lanes=4,
            expected_source="both ends support 4X HDR",
            capable_speed="HDR",
            capable_lanes=4,
            counters={**pma, **distinct(traffic, i * ports_per_switch + p)},
            counters_ext=distinct(ext, i * ports_per_switch + p),
            last_collected_at=now,
            first_seen_at=now,
        )
        for i, dev in enumerate(devices)
        for p in range(1, ports_per_switch + 1)
    ]
    Port.objects.bulk_create(ports, batch_size=2000)
    by_device: dict[int, list] = {}
    for r in ports:
        by_device.setdefault(r.device_id, []).append(r)
    NodeReadings.objects.bulk_create(
        (NodeReadings(node_id=dev.node_id, **readings.encode(by_device[dev.pk])) for dev in devices), batch_size=500
    )
    NodeHwReadings.objects.bulk_create(
        (NodeHwReadings(readings_id=dev.node_id, hw_counters=readings.encode_hw(by_device[dev.pk])) for dev in devices),
        batch_size=500,
    )
    # Cabling: the leaves' lower half to the hosts' ports (the host speaks for the link), their upper
    # half to the spines' ports (the leaf speaks: first by name); spare ports stay uncabled.
    half = ports_per_switch // 2
    down = [r for i, r in enumerate(ports) if i // ports_per_switch < leaves and r.number <= half]
    up = [r for i, r in enumerate(ports) if i // ports_per_switch < leaves and r.number > half]
    spine = [r for i, r in enumerate(ports) if i // ports_per_switch >= leaves]
    hosts = list(Port.objects.filter(device__node__kind=Node.Kind.HOST).select_related("device__node").order_by("id"))
    names = {n.pk: n.name for n in nodes}
    dirty = []

    def cable(a: Port, a_label: str, b: Port, b_label: str) -> None:  # a speaks for the link
        a.peer, a.peer_label, a.link_owner = b, b_label, True
        b.peer, b.peer_label, b.link_owner = a, a_label, False
        for end in (a, b):
            end.capable_speed, end.capable_lanes = "HDR", 4
        dirty.extend((a, b))

    def switch_label(port: Port) -> str:
        return f"{names[devices_by_id[port.device_id].node_id]} port {port.number}"

    devices_by_id = {d.pk: d for d in devices}
    for leaf, host in zip(down, hosts, strict=False):
        cable(host, f"{host.device.node.name} {host.device.name}/{host.number}", leaf, switch_label(leaf))
    for leaf, sp in zip(up, spine, strict=False):
        cable(leaf, switch_label(leaf), sp, switch_label(sp))
    Port.objects.bulk_update(dirty, ["peer", "peer_label", "link_owner", "capable_speed", "capable_lanes"], 2000)
    Port.objects.filter(device__node__kind=Node.Kind.SWITCH, peer__isnull=True).update(
        state_id=1, state_name="DOWN", phys_state_id=2, phys_state_name="Polling", rate_gbps=None, lanes=None,
        speed=None, expected_speed=None, expected_lanes=None, expected_source="", capable_speed=None,
        capable_lanes=None,
    )  # fmt: skip
    return len(ports)


def fresh() -> None:
    """Every node ingested now: a slow scrape must not find them stale (and drop their counters)."""
    from django.utils import timezone

    from fabricweb.inventory.models import Node

    Node.objects.update(last_ingested_at=timezone.now())


class Server:
    """A fresh gunicorn serving fabricweb on `database` (a URL), one sync worker, as deploy/ runs it."""

    def __init__(self, database: str, tree: Path = REPO) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            **SERVER_ENV,
            "DJANGO_SETTINGS_MODULE": "fabricweb.settings",
            "DATABASE_URL": database,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DEBUG": "0",
            "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only-secret-" + "0123456789abcdefghijklmnopqrstuvwxyz"),
        }
        gunicorn = str(Path(sys.executable).with_name("gunicorn"))
        command = [gunicorn, "fabricweb.wsgi", "--workers", "1", "--timeout", "300", "--bind", f"127.0.0.1:{self.port}"]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop(): the server outlives this call)
        self.process = subprocess.Popen(
            command, cwd=tree, env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=self.log
        )
        deadline = time.monotonic() + 60
        while True:  # /healthz: the worker booted (Django set up), nothing of /metrics run yet
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5).read()
                break
            except urllib.error.HTTPError:
                break  # it answered (503 while the bench's nodes look unhealthy to it)
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.log.seek(0)
                    raise RuntimeError(f"gunicorn did not start: {self.log.read().decode()[-2000:]}") from None
                time.sleep(0.2)
        self.worker = worker_of(self.process.pid)

    def get(self, series: str, accept: str, **params: str) -> tuple[float, bytes]:
        """Seconds of one GET /metrics read to its end, and the body."""
        query = urllib.parse.urlencode({"set": series, **params})
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics?{query}", headers={"Accept": accept})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=300) as response:
            body = response.read()
        return time.perf_counter() - started, body

    def peak_rss_mb(self) -> float:
        """The worker's peak resident memory (VmHWM), MB."""
        for line in Path(f"/proc/{self.worker}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def use_database(backend: str) -> str:
    """Make `backend`'s test database this process's default; its URL, for the web processes."""
    from django.conf import settings
    from django.db import connections

    if backend == "postgres":
        connections["default"] = connections["postgres"]
        db = connections["postgres"].settings_dict
        return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return f"sqlite:///{settings.DATABASES['default']['TEST']['NAME']}"


def worker_of(master: int) -> int:
    """gunicorn's one worker: the master's child."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise RuntimeError("no gunicorn worker")


def spread(values: list[float], unit: float = 1.0) -> str:
    """min / median / max, in `unit`s."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low * unit:7.3f} / {mid * unit:7.3f} / {high * unit:7.3f}"


def measure(
    database: str, series: str, runs: int, warm: int, accept: str, trees: list[Path], **params: str
) -> list[dict]:
    """`runs` fresh processes per source tree, the trees alternated run by run (A/B under the same load):
    each process's first GET, `warm` more, and its peak RSS."""
    out = [{"first": [], "warm": [], "rss": [], "body": b""} for _ in trees]
    for _ in range(runs):
        for tree, m in zip(trees, out, strict=True):
            server = Server(database, tree)
            try:
                fresh()
                seconds, m["body"] = server.get(series, accept, **params)
                m["first"].append(seconds)
                for _ in range(warm):
                    fresh()
                    m["warm"].append(server.get(series, accept, **params)[0])
                m["rss"].append(server.peak_rss_mb())
            finally:
                server.stop()
    for m in out:
        lines = [line for line in m.pop("body").splitlines() if line and not line.startswith(b"#")]
        own = [line for line in lines if not line.startswith(b"fabricweb_exporter_")]
        hosts = [line for line in own if not SWITCH_SIDE.search(line)]
        m["series"], m["bytes"] = len(hosts), sum(len(x) + 1 for x in hosts)
        m["switch_series"] = len(own) - len(hosts)
        m["body"] = sum(len(x) + 1 for x in lines)
    return out


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--ports", type=int, nargs="+", default=[5000, 20000, 50000])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per set (at least 5 for the figures)")
    parser.add_argument("--warm", type=int, default=3, help="warm GETs per process after its first")
    parser.add_argument(
        "--sets", nargs="+", default=None, help="default: all health (and counters detail with --switches)"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="also serve from this source tree (e.g. `git worktree add /tmp/base HEAD~3`), alternated run by run",
    )
    parser.add_argument("--shard", help="K/N: every GET asks for ?shard=K/N (one of N scrape jobs)")
    parser.add_argument(
        "--served",
        action="store_true",
        help="with --shard: the servers are started with FABRIC_METRICS_SHARDS=K/N (one process per shard)",
    )
    parser.add_argument("--switches", type=int, default=0, help="also a fat tree of this many switches")
    parser.add_argument("--switch-ports", type=int, default=40, help="ports per switch (default 40)")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="openmetrics",
        help="openmetrics: what Prometheus asks for first; text: Prometheus text 0.0.4",
    )
    args = parser.parse_args()
    if args.served:
        if not args.shard:
            parser.error("--served needs --shard")
        SERVER_ENV["FABRIC_METRICS_SHARDS"] = args.shard

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import get_runner

    if args.db == "postgres" and "postgres" not in settings.DATABASES:
        sys.exit('TEST_POSTGRES_URL is not set: run `eval "$(scripts/test-services start)"` first')
    work = tempfile.mkdtemp(prefix="bench-metrics-db-")
    # A file, not the tests' in-memory SQLite: the web processes open it too.
    settings.DATABASES["default"]["TEST"]["NAME"] = os.path.join(work, "bench.sqlite3")
    runner = get_runner(settings)(verbosity=0)
    old = runner.setup_databases()
    try:
        database = use_database(args.db)
        port = sample_port()
        accept = FORMATS[args.format]
        shard = {"shard": args.shard} if args.shard else {}
        sets = args.sets or ["all", "health", *(("counters", "detail") if args.switches else ())]
        print(
            f"{args.db}, {args.format}, {os.cpu_count()} CPUs: per set {args.runs} fresh gunicorn processes, "
            f"each its first GET of /metrics{'?shard=' + args.shard if args.shard else ''} then {args.warm} warm "
            f"(series per port: the hosts' per host port, the switches' per switch port); seconds min / median / "
            "max; goals at 20,000 "
            "ports: default (all) < 1 s, health < 0.2 s, peak RSS < 250 MB",
            flush=True,
        )
        for ports in args.ports:
            fill(ports, port)
            switch_ports = fill_switches(args.switches, args.switch_ports) if args.switches else 0
            print(f"{ports:6d} ports" + (f" beside {switch_ports} switch ports" if switch_ports else "")
                  + f"; load average before {load()}", flush=True)  # fmt: skip
            trees = [REPO, *([args.against.resolve()] if args.against else [])]
            for series in sets:
                for tree, m in zip(
                    trees, measure(database, series, args.runs, args.warm, accept, trees, **shard), strict=True
                ):
                    print(
                        f"{ports:6d} ports  set={series:8} first {spread(m['first'])} s  warm {spread(m['warm'])} s  "
                        f"peak RSS {spread(m['rss'])} MB  {m['series']:8d} series ({m['series'] / ports:5.1f}, "
                        f"{m['bytes'] / ports:6.0f} B per host port)"
                        + (
                            f" + {m['switch_series']} ({m['switch_series'] / switch_ports:4.1f} per switch port)"
                            if switch_ports
                            else ""
                        )
                        + f"  body {m['body'] / 1e6:6.1f} MB"
                        + (f"  [{tree}]" if len(trees) > 1 else ""),
                        flush=True,
                    )
            print(f"{ports:6d} ports  load average after {load()}", flush=True)
    finally:
        runner.teardown_databases(old)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
