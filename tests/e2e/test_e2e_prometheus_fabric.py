"""Covers fabricweb/runfabric/__main__.py, collectors/__main__.py.

A real Prometheus scraping a running fabric with switches: the dashboard's Switches row has data, and the
switch side's alert rules fire for their faults, naming both ends, and for nothing else.

The fabric is `runfabric --fabric` (the simulator's hosts under two leaves and a spine, ibsim and opensm
simulating the switch fabric, a fabric collector sweeping it over management datagrams, agents, Redis,
ingest, Celery, web) polled every second; Prometheus scrapes /metrics and evaluates the shipped rules every
second, their `for:` removed (promtool's unit tests check the shipped durations). Two links train low from
the start (an uplink at DDR, a host's link at 1X: both ends support 12X QDR); then an uplink is unlinked
through ibsim's console, symbol errors rise on a spine port and a leaf stops answering management datagrams.
"""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.e2e_harness import STARTUP_S, RunningFabric, fresh_database, leased_redis_db
from tests.e2e.prometheus_support import (
    SWITCH_ROW,
    Prometheus,
    free_port,
    panel_queries,
    variable_queries,
    with_variables,
)
from tests.ibsim_support import needs_ibsim

pytestmark = needs_ibsim
NODES = 4
START_FAULTS = ("leaf01/21:speed=DDR", "cn002/mlx4_0/2:width=1X")
FAULTS = ("leaf01/30:down", "spine01/5:symbol-errors=50/s", "leaf02:mute")
# True findings of the simulated hosts, none of this test's: cn002's ConnectX-3 on PCIe Gen3 x8 under a
# 120 Gb/s port, its 32-bit counters capped from the start.
HOSTS_OWN = {("InfinibandPcieBottleneck", "cn002"), ("InfinibandCounterCapped", "cn002")}


def fired(prometheus: Prometheus) -> set[tuple[str, str]]:
    """(alert, where) of the firing alerts: a link's speaking end, a switch port, a switch, a host port."""
    out = set()
    for alert in prometheus.firing():
        labels = alert["labels"]
        where = labels.get("end") or (
            f"{labels['switch']} port {labels['port']}" if "port" in labels and "switch" in labels else None
        )
        where = where or labels.get("switch") or labels.get("collector") or labels.get("node")
        out.add((labels["alertname"], where))
    return out


def test_prometheus_sees_the_switch_side_and_every_switch_panel_has_data(tmp_path, django_db_blocker):
    web = f"127.0.0.1:{free_port()}"
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp_path, migrated=True) as db_url,
        django_db_blocker.unblock(),
    ):
        options = ["--nodes", str(NODES), "--web", web, "--fabric", *(f"--fault={f}" for f in START_FAULTS)]
        fabric = RunningFabric(tmp_path, "unused", db_url, redis_url, options, ALLOWED_HOSTS="127.0.0.1")
        prometheus = None
        try:
            prometheus = Prometheus(tmp_path / "prometheus", web)
            prometheus.wait(
                "every switch port and link scraped, the switch counters with rates",
                lambda: (
                    len(prometheus.query("infiniband_switch_port_up")) == 3 * 40
                    and len(prometheus.query('infiniband_link_up{type="inter-switch"} == 1')) == 40
                    and len(prometheus.query("infiniband:switch_port_data_received_bytes:rate1m")) == 3 * 40
                    and prometheus.query("infiniband_fabric_collector_up == 1")
                ),
                2 * STARTUP_S,
            )
            # The two links trained low from the start, each said once: the uplink by InfinibandLinkDegraded,
            # naming both ends; the host's own link by its port's InfinibandPortDegraded (the default set has
            # no series of a host's link: its port's say it), naming the far end.
            slow = {("InfinibandLinkDegraded", "leaf01 port 21"), ("InfinibandPortDegraded", "cn002")}
            prometheus.wait("the slow links' alerts", lambda: slow <= fired(prometheus), 30)
            assert fired(prometheus) - slow <= HOSTS_OWN, fired(prometheus)
            uplink = next(a for a in prometheus.firing() if a["labels"]["alertname"] == "InfinibandLinkDegraded")
            assert uplink["labels"]["end"] == "leaf01 port 21"
            assert uplink["labels"]["type"] == "inter-switch" and uplink["labels"]["peer"].startswith("spine01 port ")
            assert uplink["annotations"]["description"].startswith(
                f"The inter-switch link leaf01 port 21 ↔ {uplink['labels']['peer']} runs at 12X DDR where both ends "
                "support 12X QDR"
            )
            host = next(a for a in prometheus.firing() if a["labels"]["alertname"] == "InfinibandPortDegraded")
            labels = host["labels"]
            assert (labels["node"], labels["device"], labels["port"]) == ("cn002", "mlx4_0", "2")
            assert (labels["width"], labels["expected_width"], labels["expected_source"]) == (
                "1X",
                "12X",
                "both ends support 12X QDR",
            )
            assert (
                labels["peer"].startswith("leaf0")
                and f"Check the cable to {labels['peer']} and" in (host["annotations"]["description"])
            )

            fault = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), "add"]
            subprocess.run([*fault, *FAULTS], check=True, capture_output=True, timeout=30, env=fabric.env)
            expected = slow | {
                ("InfinibandSwitchPortDown", "leaf01 port 30"),
                ("InfinibandSwitchPortSymbolErrors", "spine01 port 5"),
                ("InfinibandSwitchPortSymbolErrorsFast", "spine01 port 5"),
                ("InfinibandSwitchUnreachable", "leaf02"),
            }
            prometheus.wait("every fault's alert firing", lambda: expected <= fired(prometheus), 60)
            extra = fired(prometheus) - expected - HOSTS_OWN
            assert not extra, f"alerts on healthy ports: {extra}"
            down = next(a for a in prometheus.firing() if a["labels"]["alertname"] == "InfinibandSwitchPortDown")
            assert down["annotations"]["summary"] == (
                f"leaf01 port 30: switch port down (cabled to {down['labels']['peer']})"
            )

            for title, expr in panel_queries({SWITCH_ROW}):
                assert prometheus.query(with_variables(expr)), f"panel {title!r} has no data: {expr}"
            for label, selector in variable_queries(switches=True):
                values = prometheus.api(f"label/{label}/values", **{"match[]": with_variables(selector)})
                assert set(values) == {"leaf01", "leaf02", "spine01"}, f"variable {label}: {values}"
        finally:
            fabric.stop()
            if prometheus is not None:
                prometheus.stop()
