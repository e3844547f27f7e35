"""Covers collectors/snapshot.py, fabricweb/agent/config.py, fabricweb/agent/poll.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/validation/quickparse.py, fabricweb/telemetry/validation/schema.py.

SR-IOV virtual functions centrally: the snapshot schema takes their mark as an optional device field, and a
host whose VFs come and go between polls (the agent leaving them out, by default) opens no "vanished" event."""

from __future__ import annotations

import copy
import dataclasses
import os
from datetime import UTC, datetime, timedelta

import pytest

from collectors.sim import Fabric
from collectors.snapshot import iso_utc
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.poll import Poller
from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Port
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.validation.quickparse import parse_common
from fabricweb.telemetry.validation.schema import SnapshotRejected, parse_snapshot, parse_worded

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEP = 10.0  # s, FABRIC_POLL_INTERVAL's default
PHYSICAL = {"mlx5_0", "mlx5_1"}  # cn001's two ConnectX-6


class Host:
    """cn001, simulated, polled by the node agent and ingested as its snapshots arrive."""

    def __init__(self, out: str, include_vfs: bool) -> None:
        self.sim = Fabric.create(out, 1, seed=3)
        config = AgentConfig(broker_url="redis://", node_name="head", sim_dir=out)
        self.poller = Poller(dataclasses.replace(config, include_virtual_functions=include_vfs))

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.sim.clock)

    def snapshot(self) -> dict:
        snap = self.poller.snapshot("cn001")
        snap["collected_at"] = iso_utc(self.now().timestamp())  # the simulated clock, not the wall's
        return snap

    def poll(self, vfs: int) -> dict:
        """One poll with `vfs` virtual functions on each HCA (0: none) since the last."""
        if vfs:
            self.sim.add_fault(f"cn001:vfs={vfs}")
        else:
            self.sim.clear_faults()
        self.sim.step(STEP)
        snap = self.snapshot()
        ingest_snapshot(snap, now=self.now())
        return snap


@pytest.fixture
def sim_dir(tmp_path):
    return str(tmp_path)


def vanished_events() -> list[str]:
    return sorted(Event.objects.filter(key__startswith="vanished:").values_list("key", flat=True))


def test_virtual_functions_coming_and_going_open_no_vanished_event_and_make_no_rows(each_db, sim_dir):
    host = Host(sim_dir, include_vfs=False)
    sent = [host.poll(vfs) for vfs in (0, 4, 0, 2, 0, 4, 4, 0)]
    assert len(os.listdir(os.path.join(sim_dir, "cn001", "class", "infiniband"))) == 2
    assert [len(s["devices"]) for s in sent] == [2] * 8  # the agent sent the physical HCAs only, every poll
    assert vanished_events() == []
    assert set(Device.objects.values_list("name", flat=True)) == PHYSICAL
    assert Port.objects.count() == 2
    assert not Device.objects.filter(vanished_at__isnull=False).exists()


def test_virtual_functions_sent_when_asked_are_stored_and_vanish_as_devices(each_db, sim_dir):
    """The other side of the setting: what an operator who asks for VFs gets, and what the default spares."""
    host = Host(sim_dir, include_vfs=True)
    host.poll(2)
    assert set(Device.objects.values_list("name", flat=True)) == PHYSICAL | {"mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"}
    host.poll(0)
    assert vanished_events() == ["vanished:cn001/mlx5_2", "vanished:cn001/mlx5_3", "vanished:cn001/mlx5_4",
                                 "vanished:cn001/mlx5_5"]  # fmt: skip


NOW = T0 + timedelta(minutes=1)


@pytest.fixture(scope="module")
def marked(tmp_path_factory) -> dict:
    """A snapshot the agent sent with FABRIC_INCLUDE_VIRTUAL_FUNCTIONS=true: two PFs, a VF on each."""
    host = Host(str(tmp_path_factory.mktemp("marked")), include_vfs=True)
    host.sim.add_fault("cn001:vfs=1")
    host.sim.step(STEP)
    return host.snapshot()


def test_the_schema_takes_the_mark_as_an_optional_device_field(marked):
    for parse in (parse_snapshot, parse_worded, parse_common):
        devices = {d.name: d for d in parse(copy.deepcopy(marked), NOW).devices}
        assert {n: (d.virtual_function, d.physical_function) for n, d in devices.items()} == {
            "mlx5_0": (False, None),
            "mlx5_1": (False, None),
            "mlx5_2": (True, "0000:3b:00.0"),
            "mlx5_3": (True, "0000:86:00.0"),
        }
        # Not a Device row's field: ingest copies `attrs` onto the row by name.
        assert "virtual_function" not in devices["mlx5_2"].attrs


def test_a_snapshot_from_an_older_agent_without_the_mark_still_validates(marked):
    old = copy.deepcopy(marked)
    for d in old["devices"]:
        del d["virtual_function"], d["physical_function"]
    old["schema"] = 1  # an optional key added within schema 1: agents from before it sent schema 1
    for parse in (parse_snapshot, parse_worded, parse_common):
        assert {(d.virtual_function, d.physical_function) for d in parse(copy.deepcopy(old), NOW).devices} == {
            (None, None)
        }


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("virtual_function", "yes", "device mlx5_2.virtual_function: expected true, false or null, got 'yes'"),
        ("virtual_function", 1, "device mlx5_2.virtual_function: expected true, false or null, got 1"),
        ("physical_function", 41, "device mlx5_2.physical_function: expected text of at most 256 characters, got 41"),
        ("physical_function", "0000:41\x00", "device mlx5_2.physical_function: expected text of at most 256 "),
    ],
)
def test_a_malformed_mark_is_refused_in_words(marked, key, value, reason):
    bad = copy.deepcopy(marked)
    next(d for d in bad["devices"] if d["name"] == "mlx5_2")[key] = value
    assert parse_common(copy.deepcopy(bad), NOW) is None
    with pytest.raises(SnapshotRejected) as caught:
        parse_snapshot(bad, NOW)
    assert caught.value.reason.startswith(reason)
