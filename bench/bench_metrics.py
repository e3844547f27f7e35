"""Cost of /metrics: render time and memory at 5,000, 20,000 and 50,000 ports, full and `?set=health`.

    eval "$(scripts/test-services start)"     # for --db postgres
    .venv/bin/python bench/bench_metrics.py [--db sqlite|postgres] [--ports 5000 20000 50000] [--repeat 3]
    .venv/bin/python bench/bench_metrics.py --ports 20000 --switches 500 --switch-ports 40   # and a switch fabric

With --switches, the hosts' ports are cabled to a two-level fat tree of that many switches (two
thirds leaves, half their ports down to hosts and half up to the spines; the rest spines) as fabric
ingest leaves it: switch ports with a PMA's counters (64-bit data and packets, distinct traffic per
port), both ends' link facts (far end, what both ends support, the end that speaks for the link),
each switch's fabric row; one line more per set gives the switches' share (`?node=sw*`: their series
and the links they speak for) per switch port, and `set=detail` is measured too.

Goals (issue 8): the full exposition at 20,000 ports in under 2 s and under 300 MB; the health
series alone in under 300 ms. The tables are filled directly (bulk_create) with the counters of a
real simulated ConnectX-6 port (30 counters, 24 hw_counters each), its non-zero counters made
distinct per port as on a real fabric (12 a port: traffic, packets, RDMA requests), 8 ports per
node, an open event on one port in 50. Each figure is a GET of /metrics through Django's test
client (view, collector and encoder, no network), `--repeat` times: the first with the encoder's
label cache and the kept health rows empty (a fresh web process), then warm; the nodes' last ingest is set to now before
each GET (a slow scrape must not find them stale); a GET is read to its end, a streamed body
chunk by chunk as a server writes it out. Memory is the peak of Python allocations during one
GET (tracemalloc), on top of the process as it was before; with --memory, also what a fresh
process keeps after serving both formats and its peak during a full scrape on top of that.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PORTS_PER_NODE = 8  # 4 HCAs of 2 ports
FORMATS = {"text": "", "openmetrics": "application/openmetrics-text;version=1.0.0"}
GOALS = {"all": (2.0, 300.0), "health": (0.3, None)}  # seconds, MB at 20,000 ports


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
    from fabricweb.inventory.models import Device, Node, NodeReadings, Port

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
    from fabricweb.inventory.models import Device, Node, NodeReadings, Port

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


def get(client, series: str, accept: str, keep: bool = False, **params: str) -> bytes | int:
    """GET /metrics?set=series read to its end, as a scraper reads it: the body with `keep`, else
    its size (a streamed body is not gathered here: its chunks are counted and dropped)."""
    response = client.get("/metrics", {"set": series, **params}, HTTP_ACCEPT=accept)
    assert response.status_code == 200
    if keep:
        return response.getvalue()
    return sum(map(len, response.streaming_content)) if response.streaming else len(response.content)


def measure(client, series: str, repeat: int, accept: str) -> tuple[list[float], float, int, int, float]:
    """Seconds of each GET /metrics?set=series (the first with the label cache empty), peak MB,
    samples, body bytes, and the last one's collect seconds (reading the tables, before
    encoding: fabricweb_exporter_collect_seconds)."""
    from fabricweb.exporter import collector, encoder

    # A fresh web process: no label texts, no health rows or lines kept from an earlier scrape.
    encoder._label_texts.clear()
    encoder._row_lines.clear()
    for memo in collector.MEMOS:
        memo.entries.clear()
    times = []
    for _ in range(repeat):
        fresh()
        started = time.perf_counter()
        get(client, series, accept)
        times.append(time.perf_counter() - started)
    fresh()
    body = get(client, series, accept, keep=True)
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    collect = float(
        next(line for line in body.splitlines() if line.startswith(b"fabricweb_exporter_collect_s")).split()[1]
    )
    fresh()
    tracemalloc.start()
    get(client, series, accept)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return times, peak / 1e6, samples, len(body), collect


def kept_memory(client) -> tuple[float, float, float]:
    """MB of Python allocations a fresh web process keeps after serving every set in text, then
    also in OpenMetrics (what a Prometheus and a curl between them ask for), and the peak during
    one more full OpenMetrics scrape with all of that kept: the process's Python memory at its highest."""
    import gc

    from fabricweb.exporter import collector, encoder

    encoder._label_texts.clear()
    encoder._row_lines.clear()
    for memo in collector.MEMOS:
        memo.entries.clear()
    gc.collect()
    tracemalloc.start()
    kept = []
    for accept in FORMATS.values():
        for series in ("health", "all"):
            fresh()
            get(client, series, accept)
        gc.collect()
        kept.append(tracemalloc.get_traced_memory()[0] / 1e6)
    fresh()
    tracemalloc.reset_peak()
    get(client, "all", FORMATS["openmetrics"])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return kept[0], kept[1], peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--ports", type=int, nargs="+", default=[5000, 20000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--switches", type=int, default=0, help="also a fat tree of this many switches")
    parser.add_argument("--switch-ports", type=int, default=40, help="ports per switch (default 40)")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: Prometheus text 0.0.4; openmetrics: what Prometheus asks for first",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="also: what the process keeps between scrapes (both formats) and its peak with that kept",
    )
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections
    from django.test import Client
    from django.test.utils import get_runner

    if args.db == "postgres" and "postgres" not in settings.DATABASES:
        sys.exit('TEST_POSTGRES_URL is not set: run `eval "$(scripts/test-services start)"` first')
    settings.ALLOWED_HOSTS = ["testserver"]  # Django's test client, outside the test runner
    runner = get_runner(settings)(verbosity=0)
    old = runner.setup_databases()
    try:
        if args.db == "postgres":
            connections["default"] = connections["postgres"]
        port = sample_port()
        client = Client()
        print(
            f"{args.db}, {args.format}: {args.repeat} GETs of /metrics (first: cold label cache; best warm); "
            "goals at 20,000 ports: all < 2 s and < 300 MB, health < 0.3 s"
        )
        for ports in args.ports:
            fill(ports, port)
            switch_ports = fill_switches(args.switches, args.switch_ports) if args.switches else 0
            if switch_ports:
                print(f"{ports:6d} ports beside {args.switches} switches x {args.switch_ports} ports", flush=True)
            for series in ("all", "health", *(("counters", "detail") if switch_ports else ())):
                times, mb, samples, size, collect = measure(client, series, args.repeat, FORMATS[args.format])
                seconds = min(times[1:] or times)
                goal_s, goal_mb = GOALS.get(series, (None, None))
                ratio = (
                    f"  ({seconds / goal_s:.2f} of the time goal"
                    + (f", {mb / goal_mb:.2f} of the memory goal)" if goal_mb else ")")
                    if goal_s and not switch_ports
                    else ""
                )
                print(
                    f"{ports:6d} ports  set={series:6}  {seconds:6.3f} s (cold {times[0]:.3f} s, warm "
                    f"{'/'.join(f'{t:.3f}' for t in times[1:])}; collect {collect:5.2f} s)  "
                    f"peak {mb:6.1f} MB  {samples:7d} samples  {size / 1e6:5.1f} MB body",
                    ratio if ports == 20000 else "",
                    sep="",
                    flush=True,
                )
                if switch_ports:
                    fresh()
                    body = get(client, series, FORMATS[args.format], keep=True, node="sw*")
                    lines = [line for line in body.splitlines() if line and not line.startswith(b"#")]
                    own = [line for line in lines if not line.startswith(b"fabricweb_exporter_")]
                    print(
                        f"{'':6}        set={series:8} the switches' share (node=sw*): {len(own) / switch_ports:5.2f} "
                        f"series and {sum(map(len, own)) / switch_ports:6.0f} bytes per switch port "
                        f"({len(own)} series, {len(body) / 1e6:.1f} MB with HELP/TYPE)",
                        flush=True,
                    )
            if args.memory:
                text, both, peak = kept_memory(client)
                print(
                    f"{ports:6d} ports  kept between scrapes: {text:6.1f} MB (text), {both:6.1f} MB (text and "
                    f"OpenMetrics); peak of a full scrape with that kept {peak:6.1f} MB"
                    + (f"  ({peak / GOALS['all'][1]:.2f} of the memory goal)" if ports == 20000 else ""),
                    flush=True,
                )
    finally:
        runner.teardown_databases(old)


if __name__ == "__main__":
    main()
