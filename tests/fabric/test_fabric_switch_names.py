"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py.

A switch never keeps a host's name, in both orders, on both databases.

One fake switch whose NodeDescription began `cn001` once took the name cn001 before the host had reported, and
from then on the real host cn001, signing with its valid key, was refused for good ("cn001 is a switch in the
inventory, not a host"). A name conflict is a finding now, not a lock-out: the host takes its name back, the
switch gets its fallback name (its ports, samples and events follow it), and the switch has a `name_conflict`
warning naming both; a switch describing itself as a host already known gets its fallback name at once.
"""

from __future__ import annotations

import pytest

from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from tests.fabric.fabric_support import FabricWorld


@pytest.fixture
def world(each_db, tmp_path):
    made = FabricWorld(tmp_path / "sim")
    spine = made.builder.nodes["spine01"]
    spine.description = "cn001 MF0;fake"  # the fake switch: by its description, the host cn001
    return made


def conflict() -> Event:
    return Event.objects.get(kind="name_conflict", resolved_at__isnull=True)


def test_a_host_takes_its_name_back_from_a_switch_that_took_it_first(world):
    world.poll(hosts=False)
    switch = Node.objects.get(name="cn001")
    assert switch.kind == Node.Kind.SWITCH
    switch_ports = set(Port.objects.filter(device__node=switch).values_list("pk", flat=True))
    world.poll()  # the host cn001 reports: stored, and the switch renamed
    host = Node.objects.get(name="cn001")
    assert host.kind == Node.Kind.HOST and host.devices.exists()
    switch.refresh_from_db()
    assert switch.name == f"cn001-{switch.guid[-4:]}"
    assert set(Port.objects.filter(device__node=switch).values_list("pk", flat=True)) == switch_ports
    event = conflict()
    assert event.node_id == switch.pk and event.severity == "warning"
    assert event.message.startswith(f"{switch.name}: switch {switch.guid} describes itself as cn001, a host's name")
    world.poll()  # the host's next poll is stored as any host's; the switch keeps its new name
    assert Node.objects.get(name="cn001").last_collected_at == world.now
    assert Node.objects.get(pk=switch.pk).name == switch.name and conflict().node_id == switch.pk


def test_a_switch_describing_itself_as_a_known_host_gets_its_fallback_name_at_once(world):
    world.poll(sweep=False)  # the hosts first
    world.poll()
    switch = Node.objects.get(guid=f"0x{world.builder.nodes['spine01'].guid:016x}")
    assert switch.name == f"cn001-{switch.guid[-4:]}" and switch.kind == Node.Kind.SWITCH
    assert Node.objects.get(name="cn001").kind == Node.Kind.HOST
    assert conflict().node_id == switch.pk
