"""Covers fabricweb/runfabric/__main__.py, collectors/__main__.py.

A real Prometheus scraping a running fabric: every panel query of the shipped Grafana dashboard
returns data, and every shipped alert rule is silent on a clean fabric and fires for its fault.

The fabric is runfabric (simulator, node agent, Redis, ingest, Celery, web) polled every second;
Prometheus scrapes /metrics and evaluates the shipped rules every second, with their `for:`
durations removed (promtool's unit tests check the shipped durations). Two rules cannot be
driven here and are checked silent only: InfinibandNoSubnetManager (the simulator has no
INIT/ARMED fault) and FabricwebIngestStalled (300 s without ingest). This fabric has no switches:
the dashboard's Switches row and the switch alerts are test_e2e_prometheus_fabric.py's.
"""

from __future__ import annotations

import subprocess
import sys
import time

from collectors.sim import Fabric
from tests.e2e.e2e_harness import STARTUP_S, RunningFabric, fresh_database, leased_redis_db
from tests.e2e.prometheus_support import Prometheus, free_port, panel_queries, variable_queries, with_variables

NODES = 7
# The simulator's layout for 7 nodes (checked below): ConnectX-6 cn001, cn003, cn005, cn007; RoCE cn002;
# ConnectX-7 cn004; ConnectX-3 cn006 (one HCA, two ports).
LAYOUT = {
    "cn001": "cx6",
    "cn002": "roce",
    "cn003": "cx6",
    "cn004": "cx7",
    "cn005": "cx6",
    "cn006": "cx3",
    "cn007": "cx6",
}
OLD_CX3 = "cn006"
NEWCOMER = "cn901"  # its own agent, stopped to make the node stale
# fault -> the alert it must fire and where (node, device, port; None where the alert has no such label).
FAULTS = {
    "cn001/mlx5_0/1:speed=QDR": ("InfinibandPortDegraded", ("cn001", "mlx5_0", "1")),
    "cn001/mlx5_1/1:rcv-errors=5/s": ("InfinibandReceiveErrors", ("cn001", "mlx5_1", "1")),
    "cn006/mlx4_0/1:saturate": ("InfinibandCounterCapped", ("cn006", "mlx4_0", "1")),  # capped before, too
    "cn003/mlx5_0/1:down": ("InfinibandPortDown", ("cn003", "mlx5_0", "1")),
    "cn003/mlx5_1/1:saturate": ("InfinibandCongestion", ("cn003", "mlx5_1", "1")),
    "cn004/mlx5_0:pcie=GEN3x8": ("InfinibandPcieBottleneck", ("cn004", "mlx5_0", None)),
    "cn004/mlx5_1/1:remote-errors=5/s": ("InfinibandRemotePhysicalErrors", ("cn004", "mlx5_1", "1")),
    "cn005/mlx5_0/1:symbol-errors=100/s": ("InfinibandSymbolErrors", ("cn005", "mlx5_0", "1")),
    "cn005/mlx5_1/1:flap": ("InfinibandPortFlapping", ("cn005", "mlx5_1", "1")),
    "cn007/mlx5_0/1:discards=50/s": ("InfinibandTransmitDiscards", ("cn007", "mlx5_0", "1")),
}
ALSO = {
    ("InfinibandSymbolErrorsFast", ("cn005", "mlx5_0", "1")),  # 100/s is over 10/s too
    ("InfinibandNodeStale", (NEWCOMER, None, None)),  # its agent stopped
}
SILENT_ONLY = {"InfinibandNoSubnetManager", "FabricwebIngestStalled", "FabricwebBrokerMemoryHigh"}


def where(alert: dict) -> tuple:
    labels = alert["labels"]
    return (labels.get("node"), labels.get("device"), labels.get("port"))


def is_old_cx3_cap(alert: dict) -> bool:
    return alert["labels"]["alertname"] == "InfinibandCounterCapped" and where(alert)[:2] == (OLD_CX3, "mlx4_0")


def test_prometheus_sees_every_fault_and_every_panel_has_data(tmp_path, django_db_blocker):
    web = f"127.0.0.1:{free_port()}"
    trees = tmp_path / "newcomer"
    Fabric.create(str(trees), 1)
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp_path, migrated=True) as db_url,
        django_db_blocker.unblock(),
    ):
        fabric = RunningFabric(
            tmp_path, "unused", db_url, redis_url, ["--nodes", str(NODES), "--web", web], ALLOWED_HOSTS="127.0.0.1"
        )
        prometheus = None
        try:
            newcomer = fabric.start_agent(NEWCOMER, trees / "cn001")
            prometheus = Prometheus(tmp_path / "prometheus", web)
            ports = 2 * NODES + 2  # two ports per node, and the newcomer's two
            # The ConnectX-3's capped data counters have no rate: its two ports lack one.
            prometheus.wait(
                "every node's ports scraped, with rates",
                lambda: (
                    len(prometheus.query("infiniband_port_up == 1")) == ports
                    and len(prometheus.query("infiniband:port_data_received_bytes:rate1m")) == ports - 2
                    and len(prometheus.query("infiniband_node_up == 1")) == NODES + 1
                ),
                STARTUP_S,
            )

            assert {n.name: n.kind for n in Fabric.load(str(fabric.sim_dir)).layout.nodes} == LAYOUT
            # A clean fabric: nothing pending, nothing firing, for a few evaluations. But for one true
            # finding: the simulated ConnectX-3 (cn006) has been up for days, so its 32-bit counters
            # are capped from the start; that info alert is the rule doing its job.
            for _ in range(6):
                active = [a for a in prometheus.active() if not is_old_cx3_cap(a)]
                assert active == [], [(a["labels"]["alertname"], where(a), a["state"]) for a in active]
                time.sleep(1)

            fault = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), "add"]
            subprocess.run([*fault, *FAULTS], check=True, capture_output=True, timeout=30)
            newcomer.stop()
            expected = set(FAULTS.values()) | ALSO

            def all_fired() -> bool:
                fired = {(a["labels"]["alertname"], where(a)) for a in prometheus.firing()}
                return expected <= fired

            # Congestion is the slowest: rate()[1m] must see 25 s of a saturated link (60% waiting).
            prometheus.wait("every fault's alert firing", all_fired, 60)
            faulted = {w[:2] for _, w in expected} | {(w[0], None) for _, w in expected}
            for alert in prometheus.firing():
                node, device, _ = where(alert)
                assert (node, device) in faulted or (node, None) in faulted, f"alert on a healthy port: {alert}"
                assert alert["labels"]["alertname"] not in SILENT_ONLY, alert
            degraded = next(a for a in prometheus.firing() if a["labels"]["alertname"] == "InfinibandPortDegraded")
            assert degraded["annotations"]["summary"] == "cn001 mlx5_0/1: trained at 4X QDR, expected 4X HDR"

            for title, expr in panel_queries():
                assert prometheus.query(with_variables(expr)), f"panel {title!r} has no data: {expr}"
            for label, selector in variable_queries():
                values = prometheus.api(f"label/{label}/values", **{"match[]": with_variables(selector)})
                assert values, f"variable {label} has no values"
        finally:
            fabric.stop()
        try:
            prometheus.wait(
                "FabricwebExporterDown once the web server is gone",
                lambda: any(a["labels"]["alertname"] == "FabricwebExporterDown" for a in prometheus.firing()),
                15,
            )
        finally:
            prometheus.stop()
