"""Covers fabricweb/fabric/nodes.py, fabricweb/fabric/ingest.py, fabricweb/fabric/apps.py.

An ingest process keeps every FabricNode between sweeps (nodes.KeptNodes) and reuses them only while no one
else wrote them: another process's sweep (the collectors' tokens), a FabricNode saved through the ORM, and the
inventory Node of a switch renamed or deleted between two sweeps (a host taking its name back) are all seen.

These tests commit for real (transaction=True): the nodes are kept only after a sweep's commit.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from fabricweb.fabric.models import FabricNode
from fabricweb.fabric.nodes import KEPT
from fabricweb.inventory.models import Node
from fabricweb.telemetry.models import NodePoll
from fabricweb.telemetry.storage import rowcache
from tests.fabric.fabric_support import STEP, FabricWorld

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(each_db, tmp_path):
    rowcache.CACHE.drop()
    KEPT.forget()
    made = FabricWorld(tmp_path / "sim")
    made.builder.nodes["spine01"].description = "cn001 MF0;fake"  # by its description, the host cn001
    yield made
    rowcache.CACHE.drop()
    KEPT.forget()


def stored() -> dict[str, tuple]:
    fields = ("description", "lid", "missing_since", "node_id")
    return {fn.guid: tuple(getattr(fn, f) for f in fields) for fn in FabricNode.objects.all()}


def kept() -> dict[str, tuple]:
    fields = ("description", "lid", "missing_since", "node_id")
    return {guid: tuple(getattr(fn, f) for f in fields) for guid, fn in KEPT.known.items()}


def test_it_reuses_the_nodes_of_its_last_sweep_as_they_are_stored(world):
    world.poll(hosts=False)
    first = KEPT.known
    assert first is not None and kept() == stored()
    world.builder.nodes["leaf02"].description = "leaf02 renamed"
    world.poll(hosts=False)
    assert KEPT.known is first  # reused, not read again
    assert kept() == stored()
    leaf02 = f"0x{world.builder.nodes['leaf02'].guid:016x}"
    assert FabricNode.objects.get(guid=leaf02).description == "leaf02 renamed"


def test_it_sees_a_host_take_its_name_back_from_a_switch_between_two_sweeps(world):
    world.polls(2, hosts=False)
    switch = Node.objects.get(name="cn001")
    assert switch.kind == Node.Kind.SWITCH and KEPT.known is not None
    world.poll(sweep=False)  # the host cn001 reports: the switch is renamed, the nodes kept still name it cn001
    renamed = f"cn001-{switch.guid[-4:]}"
    assert Node.objects.get(pk=switch.pk).name == renamed
    world.poll(hosts=False)
    # The sweep stored the switch's ports under its new name, not refused against the host's row.
    assert Node.objects.get(pk=switch.pk).last_collected_at == world.now
    assert Node.objects.get(name="cn001").kind == Node.Kind.HOST
    assert Node.objects.get(name="cn001").last_collected_at == world.now - timedelta(seconds=STEP)
    assert NodePoll.objects.filter(node=switch, ts=world.now).count() == 1  # its ports' samples of this sweep
    assert KEPT.known[switch.guid].node.name == renamed


def test_it_reads_the_nodes_again_after_another_process_applied_a_sweep(world):
    world.poll(hosts=False)
    stale = (KEPT.known, dict(KEPT.tokens))
    with transaction.atomic():  # another process's sweep (inside a transaction: no nodes kept)
        world.builder.nodes["leaf02"].description = "leaf02 by another"
        world.poll(hosts=False)
    KEPT.known, KEPT.tokens = stale
    world.poll(hosts=False)
    assert KEPT.known is not stale[0]
    assert kept() == stored()


def test_it_reads_the_nodes_again_after_one_is_saved_through_the_orm(world):
    world.poll(hosts=False)
    before = KEPT.known
    fn = FabricNode.objects.get(guid=f"0x{world.builder.nodes['leaf02'].guid:016x}")
    fn.missing_since = world.now  # e.g. an operator in a shell
    fn.save(update_fields=["missing_since"])
    assert set(Node.objects.filter(kind=Node.Kind.COLLECTOR).values_list("ingest_token", flat=True)) == {None}
    world.poll(hosts=False)
    assert KEPT.known is not before
    assert FabricNode.objects.get(pk=fn.pk).missing_since is None  # reached again, as the sweep says
    assert kept() == stored()


def test_it_reads_the_nodes_again_after_a_switch_node_is_deleted(world):
    world.polls(2, hosts=False)
    switch = Node.objects.get(guid=f"0x{world.builder.nodes['leaf02'].guid:016x}")
    switch.delete()
    world.poll(hosts=False)
    again = Node.objects.get(guid=switch.guid)  # named afresh, as a switch seen for the first time
    assert again.pk != switch.pk and again.kind == Node.Kind.SWITCH
    assert KEPT.known[switch.guid].node_id == again.pk
    assert kept() == stored()
