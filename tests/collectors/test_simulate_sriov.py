"""Covers collectors/__main__.py, collectors/sim/.

The simulator's SR-IOV virtual functions (`NODE[/DEVICE]:vfs=N`): written as the kernel shows them, removed
when the fault goes, and read back marked by the collector."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collectors import read_host
from collectors.__main__ import main as cli
from collectors.sim import Fabric, FaultError

PF0, PF1 = "0000:3b:00.0", "0000:86:00.0"  # cn001's two ConnectX-6 in the simulated layout


@pytest.fixture
def fabric(tmp_path):
    """One node, two ConnectX-6."""
    return Fabric.create(str(tmp_path), 1, seed=3)


def marks(fabric) -> list[tuple]:
    snap = read_host(os.path.join(fabric.out, "cn001"), host="cn001", use_verbs=False)
    return [(d.name, d.virtual_function, d.physical_function, d.pci.address) for d in snap.devices]


def pf_dir(fabric, dev: str = "mlx5_0") -> Path:
    return Path(fabric.out, "cn001", fabric.layout.by_key[f"cn001/{dev}"].pci_rel)


def pci_dirs(fabric) -> list[str]:
    """The functions below cn001's HCAs' downstream ports: the PFs and their VFs beside them."""
    return sorted(n for d in ("mlx5_0", "mlx5_1") for n in os.listdir(pf_dir(fabric, d).parent) if n[:5] == "0000:")


def test_vfs_on_a_node_give_each_hca_its_virtual_functions_named_after_the_physical_ones(fabric):
    fabric.add_fault("cn001:vfs=4")
    fabric.step(10)
    vfs0 = [(f"mlx5_{2 + i}", True, PF0, f"0000:3b:00.{1 + i}") for i in range(4)]
    vfs1 = [(f"mlx5_{6 + i}", True, PF1, f"0000:86:00.{1 + i}") for i in range(4)]
    assert marks(fabric) == [("mlx5_0", False, None, PF0), ("mlx5_1", False, None, PF1), *vfs0, *vfs1]
    pf = pf_dir(fabric)
    assert (pf / "sriov_numvfs").read_text() == "4\n"
    assert [os.readlink(pf / f"virtfn{i}") for i in range(4)] == [f"../0000:3b:00.{1 + i}" for i in range(4)]
    # A VF's port shares the physical port's link; it has no PMA of its own.
    snap = read_host(os.path.join(fabric.out, "cn001"), host="cn001", use_verbs=False)
    vf = next(d for d in snap.devices if d.name == "mlx5_2")
    assert (vf.hca_type, vf.ports[0].state.name, vf.ports[0].rate.describe()) == (
        "MT4124",
        "ACTIVE",
        "200 Gb/s (4X HDR)",
    )
    assert {e.reason.split(":")[0] for e in snap.errors} == {"N/A (no PMA)"}


def test_virtual_functions_come_and_go_with_the_fault(fabric):
    fabric.add_fault("cn001:vfs=4", "cn001/mlx5_1:vfs=1")  # the device's own count wins over the node's
    fabric.step(10)
    assert [m[0] for m in marks(fabric)] == [f"mlx5_{i}" for i in range(7)]
    assert marks(fabric)[-1] == ("mlx5_6", True, PF1, "0000:86:00.1")
    fabric.remove_fault("cn001:vfs")
    fabric.step(10)
    assert marks(fabric) == [
        ("mlx5_0", False, None, PF0),
        ("mlx5_1", False, None, PF1),
        ("mlx5_2", True, PF1, "0000:86:00.1"),
    ]
    assert pci_dirs(fabric) == [PF0, PF1, "0000:86:00.1"]
    fabric.clear_faults()
    fabric.step(10)
    assert marks(fabric) == [("mlx5_0", False, None, PF0), ("mlx5_1", False, None, PF1)]
    assert pci_dirs(fabric) == [PF0, PF1]
    assert not [n for n in os.listdir(pf_dir(fabric, "mlx5_1")) if "virtfn" in n]
    assert "vfs" not in fabric.state or fabric.state["vfs"] == {}


def test_a_later_process_removes_the_virtual_functions_an_earlier_one_wrote(fabric):
    fabric.add_fault("cn001/mlx5_0:vfs=2")
    fabric.step(10)
    assert len(marks(fabric)) == 4
    later = Fabric.load(fabric.out)
    later.clear_faults()
    later.step(10)
    assert [m[0] for m in marks(later)] == ["mlx5_0", "mlx5_1"] and pci_dirs(later) == [PF0, PF1]


def test_virtual_functions_vanish_with_their_physical_function(fabric):
    fabric.add_fault("cn001:vfs=2", "cn001/mlx5_0:vanish")
    fabric.step(10)
    assert marks(fabric) == [
        ("mlx5_1", False, None, PF1),
        ("mlx5_2", True, PF1, "0000:86:00.1"),
        ("mlx5_3", True, PF1, "0000:86:00.2"),
    ]
    assert pci_dirs(fabric) == [PF1, "0000:86:00.1", "0000:86:00.2"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cn001/mlx5_0/1:vfs=4", "vfs is a fault of the HCA's PCI function: name NODE or NODE/DEVICE"),
        ("cn001:vfs=17", "vfs=17: expected a number of virtual functions per HCA, 0 to 16"),
        ("cn001:vfs=two", "vfs=two: expected a number of virtual functions per HCA, 0 to 16"),
        ("cn001:vfs", "vfs needs a value, e.g. vfs=4"),
    ],
)
def test_a_vfs_spec_is_refused_in_words(fabric, spec, message):
    with pytest.raises(FaultError, match=message):
        fabric.add_fault(spec)


def test_simulate_writes_virtual_functions_from_the_command_line(fabric, capsys):
    assert (
        cli(["simulate", "--out", fabric.out, "--nodes", "1", "--seed", "3", "--once", "--fault", "cn001:vfs=1"]) == 0
    )
    assert [m[0] for m in marks(fabric)] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    capsys.readouterr()
    assert cli(["fault", "--out", fabric.out, "list"]) == 0
    assert capsys.readouterr().out == "cn001:vfs=1\n"
