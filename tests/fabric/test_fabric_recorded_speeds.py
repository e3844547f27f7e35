"""Covers collectors/mads/mad.py, collectors/mads/netfile.py, collectors/mads/model.py,
collectors/mads/snapshot.py, collectors/mads/text.py, collectors/link.py, fabricweb/fabric/ingest.py.

Today's speeds on recorded fabrics: XDR (LinkSpeedExt2) and FDR10 (Mellanox's ExtendedPortInfo).

ibsim cannot make either, so each fixture (tests/fixtures/fabric/xdr, fdr10; README there) holds what the
tools printed for one small fabric: `smpdump` of every query the collector sends, `iblinkinfo -l` and
`ibnetdiscover`. The collector's own discovery reads the smpdump replies (tests/fabric/recorded.py); its
speed, width and "could be" must be what iblinkinfo printed, its links named as ibnetdiscover named them,
read by the same parsers the ibsim tests and the topology import use. Ingest then judges the links, so a
4X XDR link trained at NDR is a speed downgrade.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from collectors.link import SPEED_RANK, best_common
from collectors.mads import mad, netfile
from collectors.mads.model import FabricSweep
from collectors.mads.snapshot import to_dict
from collectors.mads.text import could_be, render_text
from fabricweb.health.models import Event
from tests.fabric.recorded import RecordedFabric
from tests.ibsim_support import parse_iblinkinfo, short

FABRICS = ("xdr", "fdr10")


def discovered(name: str):
    fabric = RecordedFabric(name)
    discovery = fabric.discover()
    nodes = {n.guid: n for n in discovery.nodes.values()}
    return fabric, discovery, nodes


def links(nodes) -> dict[tuple[str, int], tuple]:
    """(node, port) -> (port, its far end's port), for every port with a link, named as iblinkinfo's parser names."""
    out = {}
    for node in nodes.values():
        for number, port in node.ports.items():
            if port.peer is not None:
                far = nodes[port.peer[0]].ports[port.peer[1]]
                out[short(node.description), number] = (port, far)
    return out


@pytest.mark.parametrize("name", FABRICS)
def test_it_reads_speed_width_and_could_be_as_iblinkinfo_recorded_them(name):
    fabric, discovery, nodes = discovered(name)
    assert discovery.errors == [] and fabric.unrecorded == []
    theirs = {k: v for k, v in parse_iblinkinfo(fabric.text("iblinkinfo")).items() if v["far"]}
    ours = links(nodes)
    assert set(ours) == set(theirs)
    for key, (port, far) in ours.items():
        seen = theirs[key]
        assert (f"{port.lanes}X", port.speed) == (seen["link"][0], seen["speed"]), key
        best = best_common(port.speed_supported, port.width_supported, far.speed_supported, far.width_supported)
        could_lanes = best.lanes if port.lanes < best.lanes else None
        could_speed = best.speed if SPEED_RANK[port.speed] < SPEED_RANK[best.speed] else None
        assert (could_lanes, could_speed) == (seen["could_lanes"], seen["could_speed"]), key
        assert (could_be(port, far) is not None) == bool(seen["could"]), key


def test_an_xdr_fabric_reads_4x_xdr_and_the_links_below_what_both_ends_support():
    _, _, nodes = discovered("xdr")
    ours = links(nodes)
    said = {key: (port.lanes, port.speed, could_be(port, far)) for key, (port, far) in ours.items()}
    assert said[("xdr-leaf01", 1)] == (4, "XDR", None)
    assert said[("xdr-leaf01", 2)] == (4, "NDR", "could be 4X XDR")  # both ends XDR-capable, trained at NDR
    assert said[("xdr-leaf01", 3)] == (4, "NDR", None)  # a ConnectX-7 supports NDR at most
    assert said[("xdr-leaf01", 4)] == (2, "XDR", "could be 4X XDR")
    text = render_text(FabricSweep("fabric-test", 0.0, nodes=list(nodes.values())))
    assert "port 1   Active/LinkUp          4X XDR   800 Gb/s    ==>  cx8-01 mlx5_0 port 1\n" in text
    assert "port 2   Active/LinkUp          4X NDR   400 Gb/s    ==>  cx8-02 mlx5_0 port 1  (could be 4X XDR)" in text
    assert "4 switch port links (2 below what both ends support)" in text


def test_an_fdr10_link_reads_fdr10_and_one_trained_at_qdr_could_be_fdr10():
    fabric, _, nodes = discovered("fdr10")
    said = {key: (port.lanes, port.speed, could_be(port, far)) for key, (port, far) in links(nodes).items()}
    assert said[("fdr10-leaf01", 1)] == (4, "FDR10", None)
    assert said[("fdr10-leaf01", 2)] == (4, "QDR", "could be 4X FDR10")
    assert said[("fdr10-leaf01", 3)] == (4, "QDR", None)  # a ConnectX-2: no FDR10
    # ExtendedPortInfo is asked of the Mellanox ports up at QDR, never of the ConnectX-2 nor of a port down.
    asked = sorted((route, port) for route, attribute, port in fabric.asked if attribute == mad.ATTR_MLNX_EXT_PORT_INFO)
    assert asked == [((), 1), ((1,), 1), ((1,), 2), ((1,), 3), ((1, 2), 1)]


@pytest.mark.parametrize("name", FABRICS)
def test_it_names_every_link_as_ibnetdiscover_recorded_it(name):
    fabric, _, nodes = discovered(name)
    net = netfile.parse(fabric.text("ibnetdiscover"))
    theirs = {(a.guid, ap): a.ports[ap].link for a, ap, b, bp in net.links() if a.kind == "switch"}
    ours = {
        (node.guid, number): f"{port.lanes}x{port.speed}"
        for node in nodes.values()
        if node.is_switch
        for number, port in node.ports.items()
        if port.peer is not None
    }
    assert ours == theirs


def test_a_switch_port_reads_its_speeds_through_port_0s_capability_masks():
    fabric, _, nodes = discovered("xdr")
    # The switch's external ports leave CapabilityMask(2) reserved (zero): alone, port 1 says no speed at all.
    alone = mad.decode_port_info(fabric.records[((1,), mad.ATTR_PORT_INFO, 1)])
    assert alone.cap_mask == 0 and alone.speed_active is None and "XDR" not in alone.speed_supported
    switch = next(n for n in nodes.values() if n.is_switch)
    assert switch.ports[1].speed == "XDR" and "XDR" in switch.ports[1].speed_supported


def ingested(name: str) -> dict[str, Event]:
    """The recorded fabric's sweep through ingest and the health rules: the problems it opens, by key."""
    from fabricweb.fabric.ingest import ingest_fabric

    _, discovery, _ = discovered(name)
    at = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
    sweep = FabricSweep("fabric-test", at.timestamp(), nodes=list(discovery.nodes.values()), local=discovery.local)
    ingest_fabric(to_dict(sweep), now=at)
    return {e.key: e for e in Event.objects.filter(resolved_at__isnull=True).exclude(severity="info")}


def test_a_4x_xdr_link_trained_at_ndr_is_a_speed_downgrade_naming_both_ends(each_db):
    events = ingested("xdr")
    assert sorted(events) == ["degraded:xdr-leaf01/switch/2", "degraded:xdr-leaf01/switch/4"]
    assert events["degraded:xdr-leaf01/switch/2"].message == (
        "xdr-leaf01 port 2 ↔ cx8-02 mlx5_0 port 1: trained at 400 Gb/s (4X NDR), expected 800 Gb/s (4X XDR): "
        "speed downgrade (NDR where XDR expected) — both ends support 4X XDR"
    )
    assert "width downgrade (2X where 4X expected)" in events["degraded:xdr-leaf01/switch/4"].message
    assert all(e.severity == "critical" for e in events.values())


def test_a_link_both_ends_could_run_at_fdr10_trained_at_qdr_is_a_speed_downgrade(each_db):
    events = ingested("fdr10")
    assert list(events) == ["degraded:fdr10-leaf01/switch/2"]  # port 1 runs FDR10; port 3's far end is QDR-only
    assert events["degraded:fdr10-leaf01/switch/2"].message.startswith(
        "fdr10-leaf01 port 2 ↔ cx3-02 mlx4_0 port 1: trained at 40 Gb/s (4X QDR), expected 40 Gb/s (4X FDR10): "
        "speed downgrade (QDR where FDR10 expected, the same 40 Gb/s total but 8b/10b encoding leaves 32 for data)"
    )
