"""Covers fabricweb/fabric/congested.py, fabricweb/fabric/ingest.py, fabricweb/inventory/readings.py.

Where congestion starts, on ibsim + opensm + the fabric collector (issue 40): PortXmitWait set through ibsim's
console (PerformanceSet) on the spine's ports down to one leaf and on the other leaf's uplinks to that spine, swept
with the forwarding tables opensm programmed and ingested: the spine's ports are the roots, the uplinks feeding
them (their traffic to that leaf's hosts goes on through them) their victims."""

from __future__ import annotations

import os

import pytest

from collectors.sim import Fabric, SwitchOptions
from fabricweb.fabric import congested
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Link
from fabricweb.inventory import readings
from fabricweb.inventory.models import Port
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
