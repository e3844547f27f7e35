"""Covers collectors/facts.py.

Same numbers as node_exporter: Debian's prometheus-node-exporter and our /metrics on the same trees.

node_exporter reads each tree directly; we read it as a node agent does (collectors.read_host,
the JSON snapshot), ingest the snapshot through the real ingest path and scrape /metrics. Every
series both report must have the same value and labels (the `infiniband_` prefix for
`node_infiniband_` and our extra `node` label aside). The series only one side has are the
differences by design, each named below with its reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors.facts import LINK_UP, is_up
from collectors.sim import Fabric
from tests.collectors.node_exporter_support import (
    INFO,
    NE_TREE,
    PROCFS_TREE,
    NodeExporter,
    collector_success,
    ne_samples,
)
from tests.exporter.exporter_support import ingest_tree, samples, scrape

Key = tuple[str, str, str]  # node_exporter's metric name, device, port
# All-ones for each PMA counter width, and its bytes for the data counters (kept in octets / 4).
ALL_ONES = {v * scale for v in (2**8 - 1, 2**16 - 1, 2**32 - 1, 2**64 - 1) for scale in (1, 4)}


def ours(client, node: str) -> tuple[dict[Key, float], dict[str, dict[str, str]], set[Key]]:
    """Our scrape of `node`, named as node_exporter names it; and the counters we flag as capped."""
    values: dict[Key, float] = {}
    info: dict[str, dict[str, str]] = {}
    capped: set[tuple[str, str, str]] = set()
    for (name, labels), value in samples(scrape(client, node=node)).items():
        labels = dict(labels)
        if labels.pop("node", node) != node:
            continue
        if name == "infiniband_port_capped":
            capped.add((labels["counter"], labels["device"], labels["port"]))
            continue
        theirs = "node_" + name
        if theirs == INFO:
            info[labels["device"]] = {k: v for k, v in labels.items() if k != "device"}
        elif name.startswith("infiniband_") and set(labels) == {"device", "port"}:
            values[(theirs, labels["device"], labels["port"])] = value
    return values, info, capped


# node_exporter's name of each counter file (the parity test's mapping, inverted).
def counter_file(metric: str) -> str | None:
    from tests.collectors.node_exporter_support import PORT_COUNTERS

    entry = PORT_COUNTERS.get(metric)
    return entry[1] if entry else None


def compare(client, tree: Path, node: str, node_exporter: NodeExporter) -> dict[Key, str]:
    """Assert parity for one tree; return the series node_exporter alone reports, with why."""
    text = node_exporter.scrape(tree)
    assert collector_success(text) == 1.0
    theirs, their_info = ne_samples(text)
    assert theirs, "node_exporter reported no infiniband series"
    ingest_tree(tree, node)
    mine, my_info, capped = ours(client, node)

    assert my_info == their_info, "infiniband_info labels differ"
    only_ours = {k for k in mine if k[0] in {t[0] for t in theirs}} - set(theirs)
    assert not only_ours, f"we report series node_exporter does not: {sorted(only_ours)}"
    differ = {k: (mine[k], theirs[k]) for k in set(mine) & set(theirs) if mine[k] != theirs[k]}
    assert not differ, f"values differ (ours, node_exporter's): {differ}"
    by_design = {}
    for key in sorted(set(theirs) - set(mine)):
        metric, device, port = key
        file = counter_file(metric)
        # A counter stuck at all-ones for its PMA width: node_exporter reports the all-ones value,
        # which a rate() would read as real traffic or errors; we flag it and leave no sample.
        if file and (file, device, port) in capped:
            by_design[key] = f"capped: {file} is stuck at all-ones; infiniband_port_capped says so instead"
        # A port with no link (DOWN/Polling): the kernel still prints a rate (`10 Gb/sec (4X SDR)`), which
        # node_exporter reports as the link's; it is no link, and we leave no sample (portfacts.HAS_LINK).
        state = mine.get(("node_infiniband_state_id", device, port))
        phys = mine.get(("node_infiniband_physical_state_id", device, port))
        if metric == "node_infiniband_rate_bytes_per_second" and not is_up(state) and phys != LINK_UP:
            by_design[key] = "no link: the port is down, whatever its rate file says"
    unexplained = sorted(set(theirs) - set(mine) - set(by_design))
    assert not unexplained, f"node_exporter reports series we do not: {unexplained}"
    # And the other way: every counter we flag as capped is one node_exporter shows at its cap.
    for file, device, port in capped:
        metric = next((m for m in {t[0] for t in theirs} if counter_file(m) == file), None)
        if metric is not None:
            assert theirs[(metric, device, port)] in ALL_ONES, (file, device, port)
    return by_design


@pytest.fixture
def node_exporter():
    path = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    assert path, "prometheus-node-exporter is not installed (scripts/system-packages installs it)"
    ne = NodeExporter(path)
    try:
        yield ne
    finally:
        ne.close()


@pytest.mark.needs_node_exporter
def test_the_fixture_trees_give_the_same_numbers_as_node_exporter(client, each_db, node_exporter):
    capped = compare(client, NE_TREE, "cn001", node_exporter)
    # The one difference by design in node_exporter's own fixture: a capped transmit-wait counter.
    assert list(capped) == [("node_infiniband_port_transmit_wait_total", "mlx4_0", "1")]
    assert compare(client, PROCFS_TREE, "cn002", node_exporter) == {}


@pytest.mark.needs_node_exporter
def test_simulated_trees_give_the_same_numbers_as_node_exporter(client, db, node_exporter, tmp_path):
    sim = Fabric.create(str(tmp_path / "sim"), 6)
    sim.add_fault("cn002/mlx4_0/1:saturate", "cn001/mlx5_0/1:speed=QDR", "cn003/mlx5_0/1:down")
    sim.step(10.0)
    sim.step(10.0)
    for node in ("cn001", "cn004", "cn006"):  # ConnectX-6, -7, RoCE: no capped counters
        assert compare(client, tmp_path / "sim" / node, node, node_exporter) == {}, node
    # cn003's port is down: node_exporter reports the rate its file prints, which is no link.
    assert list(compare(client, tmp_path / "sim" / "cn003", "cn003", node_exporter)) == [
        ("node_infiniband_rate_bytes_per_second", "mlx5_0", "1")
    ]
    capped = compare(client, tmp_path / "sim" / "cn002", "cn002", node_exporter)  # ConnectX-3, saturated
    assert {k[0] for k in capped} == {
        "node_infiniband_port_data_received_bytes_total",
        "node_infiniband_port_data_transmitted_bytes_total",
        "node_infiniband_port_packets_received_total",
        "node_infiniband_port_packets_transmitted_total",
    }
