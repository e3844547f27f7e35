"""Covers collectors/keptdevices.py, collectors/sysfs.py, fabricweb/agent/poll.py.

What of a device does not change while it stays registered is read once a registration: every poll reads the
same snapshot an uncached read does; a new registration, a port added or removed, a device gone or a counter
file gone are seen at the next poll; a device whose kept files failed is read whole, its error said every poll.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors import heldfiles
from collectors.keptdevices import KeptDevices
from collectors.sim import Fabric
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.poll import Poller
from tests.collectors.kept_support import files_opened, poll


@pytest.fixture
def tree(tmp_path) -> Path:
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    return tmp_path / "cn001"


def device_dir(tree: Path, name: str = "mlx5_0") -> Path:
    return (tree / "class" / "infiniband" / name).resolve()


def device(snap: dict, name: str = "mlx5_0") -> dict:
    return next(d for d in snap["devices"] if d["name"] == name)


def test_it_reads_the_snapshot_an_uncached_read_does_at_every_poll(tree):
    kept = KeptDevices()
    for i in range(4):
        hw = i % 2 == 0
        assert poll(tree, kept, hw_counters=hw) == poll(tree, None, hw_counters=hw)
    assert sorted(Path(d).name for d in kept.devices) == ["mlx5_0", "mlx5_1"]


def test_it_reads_a_kept_device_in_fewer_files(tree, monkeypatch):
    monkeypatch.setattr(heldfiles, "HELD_LIMIT", 0)  # (every file a poll reads opened: none held, heldfiles.py)
    opened = files_opened(monkeypatch)
    poll(tree, None)  # the PCI tree's shape is read once (collectors/pcipath.py): not counted
    opened.clear()
    poll(tree, None)
    first = len(opened)
    kept = KeptDevices()
    poll(tree, kept)
    opened.clear()
    ports = sum(len(d["ports"]) for d in poll(tree, kept)["devices"])
    assert ports == 4
    assert "board_id" not in opened and "max_link_speed" not in opened
    assert "link_layer" not in opened and "gids/0" not in opened
    assert {"fw_ver", "node_desc", "current_link_speed", "numa_node", "state", "rate", "sm_lid"} <= set(opened)
    # Per device: 6 of its own files, 2 of its PCI function's; per InfiniBand port: its link layer and GUID.
    assert len(opened) == first - 2 * (6 + 2) - ports * 2


def test_it_reads_an_infiniband_ports_link_layer_and_guid_once_a_registration(tree, tmp_path):
    kept = KeptDevices()
    before = device(poll(tree, kept))["ports"][0]
    port_dir = device_dir(tree) / "ports" / "1"
    (port_dir / "gids" / "0").write_text("fe80:0000:0000:0000:0000:0000:0000:0001\n")
    (port_dir / "link_layer").write_text("Ethernet\n")
    (port_dir / "sm_lid").write_text("0x7\n")  # an SM moved: read at every poll
    after = device(poll(tree, kept))["ports"][0]
    assert (after["port_guid"], after["link_layer"]) == (before["port_guid"], "InfiniBand")
    assert after["sm_lid"] == 7
    d = device_dir(tree)  # a new registration reads them again
    shutil.copytree(d, tmp_path / "copy", symlinks=True)
    shutil.rmtree(d)
    shutil.copytree(tmp_path / "copy", d, symlinks=True)
    again = device(poll(tree, kept))["ports"][0]
    assert (again["port_guid"], again["link_layer"]) == ("0x0000000000000001", "Ethernet")


def test_a_roce_ports_gid_is_read_at_every_poll(tree):
    port_dir = device_dir(tree) / "ports" / "1"
    (port_dir / "link_layer").write_text("Ethernet\n")
    kept = KeptDevices()
    poll(tree, kept)
    (port_dir / "gids" / "0").write_text("fe80:0000:0000:0000:0202:c9ff:fe00:0042\n")  # the netdev's MAC changed
    port = device(poll(tree, kept))["ports"][0]
    assert (port["link_layer"], port["port_guid"]) == ("Ethernet", "0x0202c9fffe000042")


def test_it_reads_every_poll_what_may_change_in_place(tree):
    kept = KeptDevices()
    poll(tree, kept)
    (device_dir(tree) / "fw_ver").write_text("16.35.9999\n")  # a live firmware activation
    (device_dir(tree) / "node_desc").write_text("cn001 HCA-9\n")
    (device_dir(tree) / "ports" / "1" / "state").write_text("1: DOWN\n")
    snap = poll(tree, kept)
    assert device(snap)["fw_ver"] == "16.35.9999" and device(snap)["node_desc"] == "cn001 HCA-9"
    assert device(snap)["ports"][0]["state"] == {"id": 1, "name": "DOWN"}


def test_it_reads_a_device_registered_again_afresh(tree, tmp_path):
    kept = KeptDevices()
    before = device(poll(tree, kept))["board_id"]
    # The driver unregisters the device and registers it again (a firmware reset, a new card): new directories.
    d = device_dir(tree)
    shutil.copytree(d, tmp_path / "copy", symlinks=True)
    shutil.rmtree(d)
    (tmp_path / "copy" / "board_id").write_text("MT_0000000999\n")
    shutil.copytree(tmp_path / "copy", d, symlinks=True)
    assert device(poll(tree, kept))["board_id"] == "MT_0000000999" != before


def test_it_sees_a_port_removed_and_added_again(tree, tmp_path):
    kept = KeptDevices()
    assert [p["port"] for p in device(poll(tree, kept))["ports"]] == [1, 2]
    port2 = device_dir(tree) / "ports" / "2"
    shutil.move(port2, tmp_path / "port2")
    assert [p["port"] for p in device(poll(tree, kept))["ports"]] == [1]
    shutil.move(tmp_path / "port2", port2)
    snap = poll(tree, kept)
    assert [p["port"] for p in device(snap)["ports"]] == [1, 2]
    assert snap == poll(tree, None)


def test_it_drops_a_device_no_longer_listed(tree):
    kept = KeptDevices()
    poll(tree, kept)
    (tree / "class" / "infiniband" / "mlx5_1").unlink()
    assert [d["name"] for d in poll(tree, kept)["devices"]] == ["mlx5_0"]
    assert [Path(d).name for d in kept.devices] == ["mlx5_0"]


def test_a_counter_file_gone_is_said_once_and_its_directory_listed_again(tree):
    kept = KeptDevices()
    poll(tree, kept)
    gone = tree / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters" / "symbol_error"
    gone.unlink()
    snap = poll(tree, kept)
    assert snap["errors"] == [{"path": str(gone), "reason": "vanished while being read"}]
    assert device(snap)["ports"][0]["counters"]["symbol_error"] is None
    again = poll(tree, kept)
    assert again["errors"] == [] and "symbol_error" not in device(again)["ports"][0]["counters"]
    assert again == poll(tree, None)


def test_a_device_whose_kept_file_fails_is_read_whole_and_its_error_said_every_poll(tree):
    kept = KeptDevices()
    board_id = device_dir(tree) / "board_id"
    board_id.unlink()
    board_id.mkdir()  # EISDIR at every read
    for _ in range(3):
        snap = poll(tree, kept)
        assert device(snap)["board_id"] is None
        assert [e["reason"] for e in snap["errors"] if e["path"].endswith("board_id")] == [
            "a directory where a file should be"
        ]
    assert [Path(d).name for d in kept.devices] == ["mlx5_1"]
    board_id.rmdir()
    board_id.write_text("MT_0000000123\n")
    assert device(poll(tree, kept))["board_id"] == "MT_0000000123"


def test_the_agents_poller_keeps_its_devices(tree):
    poller = Poller(AgentConfig(broker_url="redis://", node_name="cn001", sysfs_root=str(tree)))
    first = poller.snapshot("cn001")
    (device_dir(tree) / "hca_type").write_text("MT9999\n")  # in place: kept, as the kernel never does this
    second = poller.snapshot("cn001")
    assert device(second)["hca_type"] == device(first)["hca_type"] != "MT9999"
    assert len(poller.kept.devices) == 2
