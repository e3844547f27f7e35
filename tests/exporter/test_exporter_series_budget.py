"""The default scrape's series budget (issue 27): node_exporter's infiniband series plus a few health
series, at most SERIES_PER_PORT_BUDGET series per host port, counted on a real scrape of the fixture
trees (node_exporter's own and procfs's) ingested as a node agent sends them; the rest behind `?set=`."""

from __future__ import annotations

from exporter_support import samples, scrape
from test_exporter_node_exporter_parity import ingest_tree
from test_node_exporter_parity import NE_TREE, PROCFS_TREE

from fabricweb.exporter.selection import SERIES_PER_PORT_BUDGET

SELF = "fabricweb_exporter_"  # the exporter's own three series, not the fabric's
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
