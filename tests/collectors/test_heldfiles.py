"""Covers collectors/heldfiles.py, collectors/keptdevices.py, collectors/sysfs.py, collectors/snapshot.py,
collectors/pcipath.py, fabricweb/agent/poll.py.

A kept device's directories read at every poll, and the PCIe bridges' above it, are held open with their files:
each poll reads them in place and gets what a fresh read gets, a file rewritten in place or replaced by rename
included; a failed read on a held file reads it the ordinary way; the files are closed when their device goes, is
registered anew or is forgotten (a bridge's when no device's path crosses it), and past the process's limit files
are read the ordinary way. The agent's poll and an event's snapshot read the tree one at a time.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from collectors import heldfiles
from collectors.keptdevices import KeptDevices
from collectors.sim import Fabric
from fabricweb.agent import poll as agent_poll
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.poll import Poller
from tests.collectors.kept_support import files_opened, poll


@pytest.fixture
def tree(tmp_path) -> Path:
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    return tmp_path / "cn001"


def port_dir(tree: Path, device: str = "mlx5_0", number: int = 1) -> Path:
    return (tree / "class" / "infiniband" / device).resolve() / "ports" / str(number)


def port(snap: dict, device: str = "mlx5_0", number: int = 1) -> dict:
    dev = next(d for d in snap["devices"] if d["name"] == device)
    return next(p for p in dev["ports"] if p["port"] == number)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def device_files(kept: KeptDevices) -> int:
    return sum(len(d.files) for k in kept.devices.values() if k.held for d in k.held.dirs.values())


def held_files(kept: KeptDevices) -> int:
    """The files held open: the devices', and the PCIe bridges' above them."""
    return device_files(kept) + sum(len(d.files) for d in kept.bridges.dirs.values())


def test_a_kept_device_is_read_from_its_held_files_as_a_fresh_read_reads_it(tree, monkeypatch):
    opened = files_opened(monkeypatch)
    with monkeypatch.context() as patch:  # a kept device's poll with nothing held: every file opened
        patch.setattr(heldfiles, "HELD_LIMIT", 0)
        unheld = KeptDevices()
        poll(tree, unheld)
        opened.clear()
        poll(tree, unheld)
        files = len(opened)
    kept = KeptDevices()
    poll(tree, kept)  # read whole and kept
    poll(tree, kept)  # its directories held, their files opened and held
    opened.clear()
    assert poll(tree, kept) == poll(tree, None)
    opened.clear()
    poll(tree, kept)
    # Per device, fw_ver, node_desc, its PCI link's speed, width and numa_node, each port's 7 files and its
    # counters, and the link's speed and width of each bridge above it: none opened; hw_counters/ and the netdevs'
    # dev_port are, as before.
    assert {"fw_ver", "node_desc", "state", "rate", "sm_lid", "symbol_error", "current_link_speed"}.isdisjoint(opened)
    assert held_files(kept) == files - len(opened) > 100


def test_a_held_file_rewritten_in_place_or_replaced_reads_its_new_value(tree):
    kept = KeptDevices()
    poll(tree, kept)
    poll(tree, kept)
    counters = port_dir(tree) / "counters"
    (counters / "symbol_error").write_text("7\n")  # in place: the same file
    (port_dir(tree) / "state").write_text("1: DOWN\n")
    staged = counters / ".staged"
    staged.write_text("9\n")
    os.replace(staged, counters / "link_downed")  # by rename, as the simulator writes: a new file
    snap = poll(tree, kept)
    assert port(snap)["counters"]["symbol_error"] == 7 and port(snap)["counters"]["link_downed"] == 9
    assert port(snap)["state"] == {"id": 1, "name": "DOWN"}
    assert snap == poll(tree, None)


def test_a_failed_read_of_a_held_file_reads_it_the_ordinary_way(tree, monkeypatch):
    kept = KeptDevices()
    poll(tree, kept)
    poll(tree, kept)
    held = held_files(kept)
    failing = []

    def pread(fd, size, offset):
        failing.append(fd)
        raise OSError(5, "Input/output error")  # (EIO: the device did not answer its held file)

    with monkeypatch.context() as patch:
        patch.setattr(heldfiles.os, "pread", pread)
        snap = poll(tree, kept)
    assert len(failing) == held and held_files(kept) == held  # each closed, read afresh and held again
    assert snap == poll(tree, None)


def test_a_devices_held_files_are_closed_when_it_goes_comes_back_anew_or_is_forgotten(tree, tmp_path):
    before = open_fds()
    kept = KeptDevices()
    poll(tree, kept)
    poll(tree, kept)
    per_device, bridges = device_files(kept) // 2, len(kept.bridges.dirs)
    assert open_fds() - before == kept.held[0] > held_files(kept) > 100  # (their directories too)
    (tree / "class" / "infiniband" / "mlx5_1").unlink()  # gone: its files, and its own bridges'
    poll(tree, kept)
    assert device_files(kept) == per_device and 0 < len(kept.bridges.dirs) < bridges
    assert open_fds() - before == kept.held[0]
    device = port_dir(tree).parents[1]  # registered again: new directories, its files read whole
    shutil.copytree(device, tmp_path / "copy", symlinks=True)
    shutil.rmtree(device)
    shutil.copytree(tmp_path / "copy", device, symlinks=True)
    poll(tree, kept)
    assert device_files(kept) == 0 and open_fds() - before == kept.held[0]
    poll(tree, kept)
    assert device_files(kept) == per_device
    kept.forget()
    assert kept.held == [0] and open_fds() == before


def test_past_the_limit_files_are_read_the_ordinary_way(tree, monkeypatch):
    monkeypatch.setattr(heldfiles, "HELD_LIMIT", 12)
    kept = KeptDevices()
    for _ in range(3):
        assert poll(tree, kept) == poll(tree, None)
    assert kept.held == [12]


def test_the_agents_poll_and_an_events_snapshot_read_the_tree_one_at_a_time(tree, monkeypatch):
    reading, most = [0], [0]
    real = agent_poll.read_host

    def watched(*args, **kwargs):
        reading[0] += 1
        most[0] = max(most[0], reading[0])
        try:
            time.sleep(0.01)  # (long enough for the other thread to arrive)
            return real(*args, **kwargs)
        finally:
            reading[0] -= 1

    monkeypatch.setattr(agent_poll, "read_host", watched)
    poller = Poller(AgentConfig(broker_url="redis://", node_name="cn001", sysfs_root=str(tree)))
    snaps: list[dict] = []
    threads = [threading.Thread(target=lambda: snaps.append(poller.snapshot("cn001"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(snaps) == 4 and most == [1]
    assert held_files(poller.kept) > 100  # (their later reads held the files)
