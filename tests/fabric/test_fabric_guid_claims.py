"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py.

Port-GUID theft, on both databases: a compromised host reports another host's port GUID as its own
port's. The GUID names the host the fabric's view of the adapter confirms (its node GUID and its description),
never the thief, even when the thief copies the node GUID too; each claiming port has a `guid_conflict` event
naming both. The events resolve once the claims are one again."""

from __future__ import annotations

import pytest

from fabricweb.health.models import Event
from fabricweb.inventory.models import Port
from tests.fabric.fabric_support import FabricWorld

VICTIM, THIEF = ("cn001", "mlx5_0", 1), ("cn003", "mlx5_0", 1)


def port(node: str, device: str, number: int) -> Port:
    return Port.objects.get(device__node__name=node, device__name=device, number=number)


def conflicts() -> dict[str, Event]:
    return {e.key: e for e in Event.objects.filter(kind="guid_conflict", resolved_at__isnull=True)}


@pytest.fixture
def world(each_db, tmp_path):
    made = FabricWorld(tmp_path / "sim")
    made.polls(2)
    return made


def steal(world: FabricWorld, node_guid_too: bool):
    """From now on the thief's snapshots give its port the victim's port GUID (and its device the victim's node
    GUID, with `node_guid_too`)."""
    honest = world.host_snapshots
    victim = port(*VICTIM)
    stolen_port, stolen_node = victim.port_guid, victim.device.node_guid

    def tampered() -> list[dict]:
        snaps = honest()
        for snap in snaps:
            if snap["host"] != THIEF[0]:
                continue
            for device in snap["devices"]:
                if device["name"] == THIEF[1]:
                    if node_guid_too:
                        device["node_guid"] = stolen_node
                    for p in device["ports"]:
                        if p["port"] == THIEF[2]:
                            p["port_guid"] = stolen_port
        return snaps

    world.host_snapshots = tampered
    return honest


def test_a_stolen_port_guid_names_the_host_the_fabric_confirms_and_is_a_finding_on_both(world):
    leaf_end = port(*VICTIM).peer
    honest = steal(world, node_guid_too=False)
    world.polls(2)
    leaf_end.refresh_from_db()
    assert leaf_end.peer_label == "cn001 mlx5_0/1"  # the victim, not the thief
    found = conflicts()
    assert set(found) == {"guid_conflict:cn001/mlx5_0/1", "guid_conflict:cn003/mlx5_0/1"}
    text = found["guid_conflict:cn003/mlx5_0/1"].message
    assert text.startswith(f"cn003 mlx5_0/1: port GUID {port(*VICTIM).port_guid} is claimed by 2 hosts (")
    assert (
        "cn001 mlx5_0/1" in text and "the fabric sees it on cn001 mlx5_0" in text and "which is cn001 mlx5_0/1" in text
    )
    world.host_snapshots = honest
    world.polls(4)  # the thief reports its own GUID again: after the usual clean polls, resolved
    assert conflicts() == {}


def test_a_thief_that_copies_the_node_guid_too_is_still_not_named_the_description_decides(world):
    leaf_end = port(*VICTIM).peer
    steal(world, node_guid_too=True)
    world.polls(2)
    leaf_end.refresh_from_db()
    assert leaf_end.peer_label == "cn001 mlx5_0/1"
    found = conflicts()
    assert len(found) == 2 and all(e.message.endswith("which is cn001 mlx5_0/1") for e in found.values())
