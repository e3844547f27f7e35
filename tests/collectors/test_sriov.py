"""Covers collectors/__main__.py, collectors/text.py.

SR-IOV virtual functions read from sysfs: a VF's PCI function has `physfn`, a link to its physical function."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from collectors import read_host, to_dict
from collectors.__main__ import main as cli
from collectors.text import render_text
from tests.collectors.sysfs_fixtures import NODE_EXPORTER, PROCFS

PF = "0000:41:00.0"
VFS = ["0000:41:00.1", "0000:41:00.2", "0000:41:00.3", "0000:41:00.4"]
BUS = "devices/pci0000:40/0000:40:01.1"  # the root port the card sits behind, as on an AMD host


def add_device(root: Path, address: str, name: str, *, guid: str) -> Path:
    """A ConnectX function with one ACTIVE port, laid out as the kernel does; returns its PCI directory."""
    pci = root / BUS / address
    dev = pci / "infiniband" / name
    port = dev / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    files = {
        pci / "current_link_speed": "16.0 GT/s PCIe" if address == PF else "Unknown",
        pci / "current_link_width": "16" if address == PF else "0",
        pci / "numa_node": "1",
        dev / "node_type": "1: CA",
        dev / "node_guid": guid,
        dev / "fw_ver": "20.39.2048",
        dev / "hca_type": "MT4123" if address == PF else "MT4124",
        port / "state": "4: ACTIVE",
        port / "phys_state": "5: LinkUp",
        port / "rate": "200 Gb/sec (4X HDR)",
        port / "link_layer": "InfiniBand",
        port / "counters" / "symbol_error": "0",
    }
    for path, text in files.items():
        path.write_text(text + "\n")
    (dev / "device").symlink_to(f"../../../{address}")
    klass = root / "class" / "infiniband"
    klass.mkdir(parents=True, exist_ok=True)
    (klass / name).symlink_to(f"../../{BUS}/{address}/infiniband/{name}")
    return pci


def sriov_tree(root: Path, vfs: int = 4) -> Path:
    """One PF (mlx5_0) with `vfs` virtual functions (mlx5_1 ...): physfn on each VF, virtfn<N> on the PF."""
    pf = add_device(root, PF, "mlx5_0", guid="0c42:a103:0012:3456")
    (pf / "sriov_totalvfs").write_text("16\n")
    (pf / "sriov_numvfs").write_text(f"{vfs}\n")
    for i, address in enumerate(VFS[:vfs]):
        vf = add_device(root, address, f"mlx5_{i + 1}", guid=f"0c42:a103:0112:34{i:02x}")
        (vf / "physfn").symlink_to(f"../{PF}")
        (pf / f"virtfn{i}").symlink_to(f"../{address}")
    return root


def read(root: Path, **options):
    return read_host(str(root), host="cn010", use_verbs=False, now=0.0, **options)


def test_virtual_functions_are_marked_with_their_physical_function(tmp_path):
    snap = read(sriov_tree(tmp_path))
    assert snap.errors == []
    marks = {d.name: (d.virtual_function, d.physical_function, d.pci.address) for d in snap.devices}
    assert marks == {
        "mlx5_0": (False, None, PF),
        "mlx5_1": (True, PF, VFS[0]),
        "mlx5_2": (True, PF, VFS[1]),
        "mlx5_3": (True, PF, VFS[2]),
        "mlx5_4": (True, PF, VFS[3]),
    }
    # A VF is read in full like any device: its port, and `Unknown` PCIe speed as missing, not an error.
    vf = snap.devices[1]
    assert (vf.hca_type, vf.ports[0].state.name, vf.pci.current_gts) == ("MT4124", "ACTIVE", None)


def test_the_snapshot_json_and_text_carry_the_mark(tmp_path):
    snap = read(sriov_tree(tmp_path))
    devices = {d["name"]: d for d in to_dict(snap)["devices"]}
    assert (devices["mlx5_0"]["virtual_function"], devices["mlx5_0"]["physical_function"]) == (False, None)
    assert (devices["mlx5_3"]["virtual_function"], devices["mlx5_3"]["physical_function"]) == (True, PF)
    text = render_text(snap)
    assert text.count(f"\tSR-IOV virtual function of {PF}\n") == 4
    pf_block = text.split("CA 'mlx5_1'")[0]
    assert "virtual function" not in pf_block


def test_the_snapshot_command_shows_the_mark_in_json_and_text(tmp_path, capsys):
    root = sriov_tree(tmp_path)
    assert cli(["snapshot", "--sysfs-root", str(root), "--host", "cn010", "--format", "json"]) == 0
    devices = json.loads(capsys.readouterr().out)["devices"]
    assert [(d["name"], d["virtual_function"], d["physical_function"]) for d in devices] == [
        ("mlx5_0", False, None),
        *((f"mlx5_{i}", True, PF) for i in range(1, 5)),
    ]
    assert cli(["snapshot", "--sysfs-root", str(root), "--host", "cn010", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "CA 'mlx5_4'\n" in out and out.count(f"SR-IOV virtual function of {PF}") == 4


def test_virtual_functions_can_be_left_unread(tmp_path):
    root = sriov_tree(tmp_path)
    snap = read(root, virtual_functions=False)
    assert [d.name for d in snap.devices] == ["mlx5_0"] and snap.errors == []
    # The PF reads the same whichever way, and the same as on a host with SR-IOV off.
    assert snap.devices[0] == read(root).devices[0] == read(sriov_tree(tmp_path / "off", vfs=0)).devices[0]


@pytest.mark.parametrize("root", [PROCFS, NODE_EXPORTER], ids=["procfs", "node-exporter"])
def test_real_hardware_trees_without_physfn_read_as_before(root):
    snap = read(root)
    # These trees have no `device` link (no PCI function to ask): unknown, nothing else changes.
    assert all(d.virtual_function is None and d.physical_function is None for d in snap.devices)
    left_out = read(root, virtual_functions=False)
    assert left_out.devices == snap.devices and left_out.errors == snap.errors
    for d in to_dict(snap)["devices"]:
        assert (d.pop("virtual_function"), d.pop("physical_function")) == (None, None)


def test_a_tree_without_physfn_links_marks_no_device_virtual(tmp_path):
    snap = read(sriov_tree(tmp_path, vfs=0))
    assert [(d.name, d.virtual_function) for d in snap.devices] == [("mlx5_0", False)] and snap.errors == []


def vf_dir(root: Path, index: int = 0) -> Path:
    return root / BUS / VFS[index]


def only_mark_lost(before, after, vf_name: str) -> None:
    """`after` is `before` but for the VF's mark, now unknown: every other value of every device was read."""
    lost = next(d for d in after.devices if d.name == vf_name)
    assert (lost.virtual_function, lost.physical_function) == (None, None)
    assert lost.ports and lost.ports[0].state.name == "ACTIVE"
    assert [dataclasses.replace(d, virtual_function=None, physical_function=None) for d in after.devices] == [
        dataclasses.replace(d, virtual_function=None, physical_function=None) for d in before.devices
    ]


def test_a_dangling_physfn_costs_only_the_mark(tmp_path):
    root = sriov_tree(tmp_path)
    before = read(root)
    physfn = vf_dir(root) / "physfn"
    physfn.unlink()
    physfn.symlink_to("../0000:99:00.0")  # the PF's directory is gone
    after = read(root)
    only_mark_lost(before, after, "mlx5_1")
    path = str(root / "class" / "infiniband" / "mlx5_1" / "device" / "physfn")
    assert [(e.path, e.reason) for e in after.errors] == [(path, "points nowhere (the physical function is gone?)")]
    # Not known to be a VF, so not left out either: an unknown device is reported.
    assert "mlx5_1" in [d.name for d in read(root, virtual_functions=False).devices]


@pytest.mark.parametrize("kind", ["loop", "file"])
def test_an_unreadable_physfn_costs_only_the_mark(tmp_path, kind):
    root = sriov_tree(tmp_path)
    before = read(root)
    physfn = vf_dir(root, 2) / "physfn"
    physfn.unlink()
    if kind == "loop":
        physfn.symlink_to("physfn")  # resolving it loops (ELOOP)
        reason = "points nowhere (the physical function is gone?)"
    else:
        physfn.write_text("0000:41:00.0\n")
        reason = "not a link to a PCI function"
    after = read(root)
    only_mark_lost(before, after, "mlx5_3")
    assert [(os.path.basename(e.path), e.reason) for e in after.errors] == [("physfn", reason)]


def test_a_copied_tree_keeps_the_mark_without_the_address(tmp_path):
    """`cp -rL` of a host's sysfs makes physfn a directory: still a VF, its PF's address lost."""
    root = sriov_tree(tmp_path)
    physfn = vf_dir(root) / "physfn"
    physfn.unlink()
    physfn.mkdir()
    snap = read(root)
    vf = next(d for d in snap.devices if d.name == "mlx5_1")
    assert (vf.virtual_function, vf.physical_function) == (True, None) and snap.errors == []
    assert "SR-IOV virtual function of a physical function of unknown address" in render_text(snap)
