"""Covers fabricweb/fabric/congested.py, fabricweb/fabric/ingest.py, fabricweb/inventory/readings.py,
fabricweb/exporter/congestion.py, collectors/xmitwait.py.

Congestion as lost bandwidth on ibsim + opensm + the fabric collector, PortXmitWait set through ibsim's
console (PerformanceSet) and swept: on uplinks of a Quantum-2 and a Switch-IB 2 (ibsim answers the NodeInfo
DeviceID its net file's `devid=` gives) trained at 12X and 4X QDR, the share of link time lost in /metrics and in
the congestion rule is the hand computation over the seconds between the sweeps; and on the spine's ports down to
one leaf and the other leaf's uplinks to that spine, with the forwarding tables opensm programmed, the spine's
ports are the roots and the uplinks feeding them (their traffic to that leaf's hosts goes on through them) their
victims."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from collectors.sim import Fabric, SwitchOptions
from fabricweb.fabric import congested
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Link
from fabricweb.health.models import Event
from fabricweb.inventory import readings
from fabricweb.inventory.models import Node, Port
from tests.exporter.exporter_support import by_name, scrape, switch_port
from tests.ibsim_support import Ibsim, needs_ibsim

pytestmark = needs_ibsim


def test_it_marks_congested_spine_ports_down_to_a_leaf_roots_and_the_uplinks_feeding_them_victims(
    tmp_path, request, each_db
):
    sim = Ibsim(Fabric.create(str(tmp_path / "sim"), 6, seed=5, switches=SwitchOptions(switch_ports=12)), request)
    ingest_fabric(sim.snapshot())  # the tables, and the counters' baseline
    links = Link.objects.filter(inter_switch=True, gone_at__isnull=True)
    both_ways = [pair for link in links for pair in ((link.a_label, link.b_label), (link.b_label, link.a_label))]
    # The spine's side of leaf01's uplinks (traffic down to leaf01's hosts), and leaf02's uplinks to the spine.
    down = sorted(spine for spine, leaf in both_ways if spine.startswith("spine01 ") and leaf.startswith("leaf01 "))
    feeding = sorted(leaf for leaf, spine in both_ways if leaf.startswith("leaf02 ") and spine.startswith("spine01 "))
    assert down and feeding
    for label in (*down, *feeding):
        switch, _, number = label.partition(" port ")
        os.write(sim.holder, f'PerformanceSet "{switch}"[{number}] PortCounters.PortXmitWait=2000000000\n'.encode())
    ingest_fabric(sim.snapshot(routes=False))
    found = {c.end: c for c in congested.top()}
    # ibsim's switches answer NodeInfo.DeviceID 0: no row, the assumed 8 bytes a count. 12X QDR is 1.5e10 B/s, over
    # the seconds between the two sweeps (the stored poll's): a share above 1, said so, not capped.
    first = Port.objects.get(device__node__name="spine01", number=int(down[0].rsplit(" ", 1)[1]))
    counts, seconds = readings.last_wait(readings.attach([first])[0])
    assert counts == 2_000_000_000
    assert found[down[0]].share == pytest.approx(2e9 * 8 / (1.5e10 * seconds))
    assert found[down[0]].unit == "8 bytes per count, assumed"
    assert {found[label].root for label in down} == {"root"}  # on to leaf01's host ports: not congested
    for label in feeding:  # its traffic to leaf01's hosts goes on through a congested spine port
        assert found[label].root.removeprefix("victim of ") in down, (label, found[label].root)


def with_device_ids(fabric: Fabric, ids: dict[str, int]) -> Fabric:
    """The fabric's net file with a `devid=` line before each named switch: ibsim answers NodeInfo.DeviceID with
    the last one given (a switch after it, unnamed here, keeps it)."""
    net = Path(fabric.out) / "fabric.net"
    text = net.read_text()
    for switch, device in ids.items():
        text, n = re.subn(rf'(switchguid=\S+\n)(Switch \d+ "{switch}")', rf"devid=0x{device:04x}\n\1\2", text)
        assert n == 1, switch
    net.write_text(text)
    return fabric


# (switch, port, lanes, bytes of link time one count is): leaf01 a Quantum-2 (8 bytes of the port's time), leaf02
# a Switch-IB 2 (32 bytes of each lane's: x lanes); port 8 of each trained at 4X instead of 12X.
UPLINKS = (("leaf01", 7, 12, 8), ("leaf01", 8, 4, 8), ("leaf02", 7, 12, 32 * 12), ("leaf02", 8, 4, 32 * 4))
# Enough waits that the smallest share, the 12X Quantum-2 port's (0.53 over the seconds between the two sweeps),
# stays over the rule's 5% however long a busy machine takes between them (up to 10 s): at 100,000,000, a gap
# of 1.1 s took it under, and the rule rightly said nothing of that port.
COUNTS = 1_000_000_000


def test_perfset_waits_on_two_asics_at_two_widths_are_the_hand_computed_share_in_metrics_and_the_rule(
    tmp_path, request, each_db, client
):
    faults = ("leaf01/8:width=4X", "leaf02/8:width=4X")
    fabric = Fabric.create(str(tmp_path / "sim"), 6, seed=5, switches=SwitchOptions(switch_ports=12, faults=faults))
    sim = Ibsim(with_device_ids(fabric, {"leaf01": 0xD2F2, "leaf02": 0xCF08}), request)
    ingest_fabric(sim.snapshot())  # the counters' baseline
    for switch, number, _, _ in UPLINKS:
        os.write(sim.holder, f'PerformanceSet "{switch}"[{number}] PortCounters.PortXmitWait={COUNTS}\n'.encode())
    ingest_fabric(sim.snapshot(routes=False))
    metrics = by_name(scrape(client), "infiniband_switch_port_congestion_ratio")
    guids = dict(Node.objects.filter(kind=Node.Kind.SWITCH).values_list("name", "guid"))
    events = {
        (e.node.name, e.port.number): e for e in Event.objects.filter(kind="congestion").select_related("node", "port")
    }
    for switch, number, lanes, bytes_per_count in UPLINKS:
        port = Port.objects.get(device__node__name=switch, number=number)
        assert (port.speed, port.lanes) == ("QDR", lanes)
        counts, seconds = readings.last_wait(readings.attach([port])[0])  # seconds: between the two sweeps
        assert counts == COUNTS
        share = COUNTS * bytes_per_count / (lanes * 10e9 / 8 * seconds)  # QDR: 10 Gb/s a lane
        assert metrics[switch_port(switch, number, guids[switch])] == pytest.approx(share, rel=1e-9)
        assert events[switch, number].details["lost_share"] == round(share, 3)
