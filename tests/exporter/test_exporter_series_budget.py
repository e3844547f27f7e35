"""Covers fabricweb/exporter/selection.py.

The default scrape's series budget: node_exporter's infiniband series plus a few health
series, at most SERIES_PER_PORT_BUDGET series per host port, counted on a real scrape of the fixture
trees (node_exporter's own and procfs's) ingested as a node agent sends them, and of a simulated fabric
whose host ports each speak for a cable the fabric collector has swept; the rest behind `?set=`.

Per port is per host port, as bench/bench_metrics.py divides: the series of the hosts (their nodes',
devices' and ports', and the links a host's port speaks for) over the hosts' ports. Where switches are
swept, their series (their own, their ports', the links a switch port speaks for, the fabric collectors')
count over the switch ports, against the same budget.
"""

from __future__ import annotations

from fabricweb.exporter.selection import SERIES_PER_PORT_BUDGET
from tests.collectors.node_exporter_support import NE_TREE, PROCFS_TREE
from tests.exporter.exporter_support import LiveWorld, ingest_tree, samples, scrape

SELF = ("fabricweb_exporter_", "fabricweb_broker_")  # the deployment's own series (the exporter's, the broker's)
OPT_IN = {
    "hw": {"infiniband_port_hw_stat_total", "infiniband_device_hw_stat_total"},
    "detail": {"infiniband_port_info", "infiniband_port_lanes", "infiniband_port_expected_lanes"},
}


def series_per_port(client, ports: int, **params: str) -> tuple[float, set[str]]:
    """Series per host port of a scrape (every node's and device's series counted against its ports), and
    the names in it."""
    names = [name for name, _ in samples(scrape(client, **params)) if not name.startswith(SELF)]
    return len(names) / ports, set(names)


def test_the_default_scrape_stays_within_its_series_budget_per_port(client, each_db):
    ingest_tree(NE_TREE, "cn001")
    ingest_tree(PROCFS_TREE, "cn002")
    ports = len(by_family(client, "infiniband_port_expected_up"))
    assert ports == 7  # every port of both trees, those down included

    per_port, names = series_per_port(client, ports)
    assert per_port <= SERIES_PER_PORT_BUDGET, f"{per_port:.1f} series per port, over {SERIES_PER_PORT_BUDGET}"
    # node_exporter's series are there (hw_counters are not theirs), the opt-in sets' are not.
    assert {"infiniband_port_data_received_bytes_total", "infiniband_legacy_data_received_bytes_total",
            "infiniband_state_id", "infiniband_rate_bytes_per_second", "infiniband_info",
            "infiniband_port_up", "infiniband_port_degraded", "infiniband_node_up"} <= names  # fmt: skip
    for opt_in, theirs in OPT_IN.items():
        assert not names & theirs, f"?set={opt_in}'s series in the default scrape: {sorted(names & theirs)}"
        assert theirs & series_per_port(client, ports, set=opt_in)[1], opt_in


def by_family(client, name: str) -> list:
    return [labels for n, labels in samples(scrape(client, set="health")) if n == name]


def sides(found: dict) -> tuple[int, int]:
    """(the hosts' series, the switches' series) of a scrape's samples, the exporter's own aside: a switch's
    series name it (`switch`), a fabric collector's too (`collector`), and a link's go with the end that
    speaks for it (`end`, `type` host: a host's port)."""
    hosts = switches = 0
    for name, labels in found:
        labels = dict(labels)
        if name.startswith(SELF):
            continue
        if "switch" in labels or "collector" in labels or labels.get("type", "host") != "host":
            switches += 1
        else:
            hosts += 1
    return hosts, switches


def test_a_fabric_whose_host_ports_speak_for_links_stays_within_the_budget_per_host_and_switch_port(
    client, tmp_path, each_db
):
    # bench/bench_metrics.py's host (a simulated ConnectX-6 node of 4 HCAs of 2 ports) under a leaf and spine
    # the fabric collector sweeps, ingested through the real paths. Clean: an open event or a degraded port's
    # words are series of the few ports at fault (1 in 50 in the bench), not of every port.
    world = LiveWorld(tmp_path / "sim", nodes=1, ports=2, hcas=4, switch_ports=16, polls=3)
    world.polls(2)
    found = samples(scrape(client))
    host_ports = [labels for name, labels in found if name == "infiniband_port_expected_up"]
    switch_ports = [labels for name, labels in found if name == "infiniband_switch_port_up"]
    cables = [dict(labels) for name, labels in samples(scrape(client, set="detail")) if name == "infiniband_link_info"]
    assert len(host_ports) == 8 and len(switch_ports) == 48
    assert sum(cable["type"] == "host" for cable in cables) == len(host_ports)  # every host port speaks for one
    assert "infiniband_link_up" in {name for name, _ in found}

    hosts, switches = sides(found)
    per_host_port, per_switch_port = hosts / len(host_ports), switches / len(switch_ports)
    assert per_host_port <= SERIES_PER_PORT_BUDGET, (
        f"{per_host_port:.1f} series per host port, over {SERIES_PER_PORT_BUDGET}"
    )
    assert per_switch_port <= SERIES_PER_PORT_BUDGET, (
        f"{per_switch_port:.1f} series per switch port, over {SERIES_PER_PORT_BUDGET}"
    )
