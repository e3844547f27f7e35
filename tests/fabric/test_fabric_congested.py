"""Covers fabricweb/fabric/congested.py, fabricweb/fabric/paths.py, fabricweb/fabric/linkrows.py.

The fabric's most congested links (fabricweb/fabric/congested.py): the share each port lost in its last poll, as
/metrics and the rule compute it, named by both ends of its link; and where the switches' tables are stored, which
congested port is the root and which are its victims."""

from __future__ import annotations

import pytest

from fabricweb.fabric import congested
from fabricweb.fabric.linkrows import LinkRow
from fabricweb.fabric.paths import RouteGraph
from tests.fabric.fabric_support import FabricWorld

QUANTUM, SWITCH_IB_2 = 0xD2F0, 0xCF08


@pytest.fixture
def world(tmp_path, each_db):
    return FabricWorld(tmp_path / "sim", nodes=6, switch_ports=12)


def test_the_most_congested_ports_come_first_with_both_ends_and_no_root_without_tables(world):
    b = world.builder
    b.nodes["leaf02"].device_id = SWITCH_IB_2  # 32 bytes of each lane's time a count; leaf01 a Quantum, 8 of the port's
    world.poll()  # the counters' baseline: no poll before it, no share
    assert congested.top() == []
    # 12X QDR uplinks (1.5e10 B/s): 10 s is 1.5e11 B of link time.
    b.add("leaf01", 7, "port_xmit_wait", 1_875_000_000)  # x 8 B = 1.5e10 B: 10%
    b.add("leaf02", 7, "port_xmit_wait", 78_125_000)  # x 32 B x 12 lanes = 3e10 B: 20%
    b.add("leaf02", 8, "port_xmit_wait", 3_906_250)  # 1.5e9 B: 1%
    world.poll()
    found = congested.top()
    assert [(c.end, round(c.share, 6), c.unit, c.root) for c in found[:3]] == [
        ("leaf02 port 7", 0.2, "32 bytes per lane per count on Switch-IB 2", "root unknown"),
        ("leaf01 port 7", 0.1, "8 bytes per count on Quantum", "root unknown"),
        ("leaf02 port 8", 0.01, "32 bytes per lane per count on Switch-IB 2", "root unknown"),
    ]
    assert all(c.far_end.startswith("spine01 port ") for c in found[:3])  # both ends of each link
    assert [c.share for c in found] == sorted((c.share for c in found), reverse=True)


def _fabric(congested_ends: set) -> tuple[RouteGraph, dict]:
    """h1 on leaf L1 port 1, h2 on L2 port 1; the leaves' port 2 to spine S's ports 1 and 2. LIDs: S 1, L1 2, L2 3,
    h1 4, h2 5. Each table: the port out for each LID (0: the switch itself; 255: no route)."""
    s, l1, l2, h1, h2 = "0xs", "0xl1", "0xl2", "0xh1", "0xh2"
    tables = [bytes([255, 0, 1, 2, 1, 2]), bytes([255, 2, 0, 2, 1, 2]), bytes([255, 2, 2, 0, 2, 1])]
    names = {s: "S", l1: "L1", l2: "L2", h1: "h1", h2: "h2"}
    cables = [(h1, 1, l1, 1), (h2, 1, l2, 1), (l1, 2, s, 1), (l2, 2, s, 2)]
    links = [
        LinkRow(i, a, ap, f"{names[a]} port {ap}", b, bp, f"{names[b]} port {bp}", None, None, None,
                names[a], names[b], None, None)
        for i, (a, ap, b, bp) in enumerate(cables, 1)
    ]  # fmt: skip
    graph = RouteGraph([(s, "S"), (l1, "L1"), (l2, "L2")], tables, links, {(h1, 1): "h1", (h2, 1): "h2"})
    labels = {(r.a_guid, r.a_port): r.a_label for r in links} | {(r.b_guid, r.b_port): r.b_label for r in links}
    return graph, labels


def test_a_congested_leaf_uplink_is_the_root_and_the_ports_feeding_it_are_its_victims():
    uplink, feeding, spine_down = ("0xl1", 2), ("0xh1", 1), ("0xs", 2)
    graph, labels = _fabric(set())
    jam = {uplink, feeding}
    assert congested.mark(graph, uplink, jam, labels) == "root"  # what it sends on to (S port 2) is not congested
    assert congested.mark(graph, feeding, jam, labels) == "victim of L1 port 2"
    # Where the spine's port toward h2 is congested too, the leaf uplink is its victim, and it the root.
    jam |= {spine_down}
    assert congested.mark(graph, uplink, jam, labels) == "victim of S port 2"
    assert congested.mark(graph, spine_down, jam, labels) == "root"  # on to L2, whose port to h2 is not congested
