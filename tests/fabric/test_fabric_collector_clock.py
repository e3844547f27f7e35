"""Covers fabricweb/api/healthz.py, fabricweb/fabric/ingest.py; through them fabricweb/fabric/growth.py,
fabricweb/fabric/hostnames.py, fabricweb/fabric/judge.py, fabricweb/fabric/links.py, fabricweb/fabric/linkstore.py,
fabricweb/fabric/nodes.py, fabricweb/fabric/refusals.py, fabricweb/fabric/routestore.py,
fabricweb/fabric/switchports.py, fabricweb/fabric/viewfindings.py.

A fabric collector's clock cannot blind the fabric view, on both databases.

A sweep dated 9 minutes ahead by the leading collector once made every later sweep "already applied" for 9
minutes: an inter-switch link pulled in that window opened no event. Sweeps are ordered as a host's snapshots
are now (after one dated ahead of its own arrival, one dated after that arrival is applied). A collector whose
clock stepped back, so that its sweeps keep being refused, is stale with the reason: on its node, /healthz and
its stale event; the next sweep applied clears them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.api.healthz import check_refused
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Sweep
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from tests.fabric.fabric_support import FabricWorld


@pytest.fixture
def world(each_db, tmp_path):
    made = FabricWorld(tmp_path / "sim")
    made.polls(2)
    return made


def test_a_sweep_dated_ahead_does_not_freeze_the_sweeps_after_it(world):
    ahead = ingest_fabric(world.builder.snapshot(world.now + timedelta(minutes=9)), now=world.now)
    assert ahead.status == "stored"
    world.builder.down("leaf01", 7)  # an uplink to spine01, pulled a poll later
    world.poll()
    last = Sweep.objects.order_by("-stored_at", "-id").first()
    assert last.applied, last.note
    down = Event.objects.get(resolved_at__isnull=True, kind="down", node__name="leaf01")
    assert down.message.startswith("leaf01 port 7 ↔ spine01 port ")
    assert Node.objects.get(name="fabric-test").refused_reason == ""


def test_a_collector_whose_clock_stepped_back_is_stale_with_the_reason_until_a_sweep_applies(world):
    for _ in range(3):
        world.poll(sweep=False)
        refused = ingest_fabric(world.builder.snapshot(world.now - timedelta(minutes=30)), now=world.now)
        assert refused.status == "duplicate" and "already applied" in refused.note
    collector = Node.objects.get(name="fabric-test")
    assert collector.refused_reason.startswith("its last 3 sweeps were dated at or before the last one applied")
    health = check_refused()
    assert health["status"] == "degraded" and health["nodes"][0]["node"] == "fabric-test"
    stale = Event.objects.get(resolved_at__isnull=True, key="stale:fabric-test")
    assert stale.message.startswith("fabric-test: no fabric sweep applied for 3 polls: its last 3 sweeps were")
    assert "its clock stepped back" in stale.message
    world.poll()  # its clock set right: the next sweep is applied
    assert Node.objects.get(name="fabric-test").refused_reason == ""
    assert check_refused()["status"] == "ok"
    assert not Event.objects.filter(resolved_at__isnull=True, key="stale:fabric-test").exists()
