"""Covers collectors/__main__.py, collectors/pcie.py, collectors/pcitopo.py, collectors/sim/,
collectors/sim/cabling.py, collectors/sim/layout.py.

The simulator's PCIe trees, read back through the collector's reader as real ones are:
a healthy switch above every HCA, the dgx and misbuilt layouts, and a switch uplink that retrains
at run time (`uplink=`)."""

from __future__ import annotations

import os

import pytest

from collectors import read_host
from collectors.__main__ import main as cli
from collectors.pcie import usable_gbps
from collectors.pcitopo import matrix
from collectors.sim import Fabric, FaultError, SwitchOptions
from collectors.sim.cabling import NET_FILE
from collectors.sim.layout import LayoutError
from tests.ibsim_support import Ibsim, needs_ibsim

GEN4_X16 = (16.0, 16, 16.0, 16)


@pytest.fixture
def out(tmp_path):
    return str(tmp_path)


def read(fabric, node):
    snap = read_host(os.path.join(fabric.out, node), host=node, use_verbs=False)
    assert snap.errors == []
    return snap


def links(hop) -> tuple:
    return (hop.current_gts, hop.current_width, hop.max_gts, hop.max_width)


def test_every_hca_of_every_kind_sits_below_a_switch_with_every_link_at_full_speed_and_width(out):
    fabric = Fabric.create(out, 4, seed=3)  # ConnectX-6, -7, -3 and RoCE nodes
    for node in fabric.layout.nodes:
        snap = read(fabric, node.name)
        assert snap.gpus == []
        for dev in snap.devices:
            path = dev.pcie_path
            assert [h.kind for h in path.hops] == ["function", "switch port", "switch port", "root port"]
            assert path.neighbours == ()
            assert all(h.current_gts == h.max_gts and h.current_width == h.max_width for h in path.hops)
            card, uplink = path.hops[0], path.hops[-1]
            # The switch uplink carries at least what the card's own link does, and more than its ports.
            assert usable_gbps(uplink.current_gts, uplink.current_width) >= usable_gbps(card.max_gts, card.max_width)
            assert usable_gbps(uplink.current_gts, uplink.current_width) > sum(p.rate.gbps for p in dev.ports)
            assert path.hops[1].current_width == card.max_width  # the downstream port shows the card's link
            assert {h.numa_node for h in path.hops} == {card.numa_node} and card.local_cpulist


def test_the_default_tree_has_the_kernels_layout(out):
    fabric = Fabric.create(out, 1, seed=3)
    path = {d.name: d.pcie_path for d in read(fabric, "cn001").devices}["mlx5_0"]
    assert [(h.address, h.kind, h.class_code) for h in path.hops] == [
        ("0000:3b:00.0", "function", 0x0207),
        ("0000:3a:00.0", "switch port", 0x0604),
        ("0000:39:00.0", "switch port", 0x0604),
        ("0000:38:00.0", "root port", 0x0604),
    ]
    assert path.host_bridge == "pci0000:38"
    assert {links(h) for h in path.hops} == {GEN4_X16}


def test_a_dgx_node_has_8_gpus_and_8_hcas_behind_4_switches_in_nvidia_smi_topo_words(out):
    fabric = Fabric.create(out, 3, seed=3, layout_faults=("cn001:dgx",))
    snap = read(fabric, "cn001")
    names, rows = matrix(snap.gpus)
    assert names == [f"mlx5_{i}" for i in range(8)]
    # Each switch: GPU 2s, 2s+1 and mlx5_2s, mlx5_2s+1; switches 0-1 on socket 0, 2-3 on socket 1.
    pix, node = "PIX PIX", "NODE NODE"
    sock0, sock1 = "SYS SYS SYS SYS", "SYS SYS SYS SYS"
    expected = (
        [f"{pix} {node} {sock1}"] * 2
        + [f"{node} {pix} {sock1}"] * 2
        + [f"{sock0} {pix} {node}"] * 2
        + [f"{sock0} {node} {pix}"] * 2
    )
    assert [" ".join(r) for r in rows] == expected
    assert [g.numa_node for g in snap.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [g.local_cpulist for g in snap.gpus][::4] == ["0-63,128-191", "64-127,192-255"]
    assert {(g.vendor, g.class_code) for g in snap.gpus} == {(0x10DE, 0x0302)}
    assert {links(g) for g in snap.gpus} == {GEN4_X16}
    host_bridges = {d.pcie_path.host_bridge for d in snap.devices}
    assert host_bridges == {"pci0000:10", "pci0000:30", "pci0000:90", "pci0000:b0"}
    for dev in snap.devices:  # every link full: nothing for the health rules to find
        assert {links(h) for h in dev.pcie_path.hops} == {GEN4_X16}
        assert sorted(n.kind for n in dev.pcie_path.neighbours) == ["gpu", "gpu", "rdma"]
    # The other nodes keep their own layout.
    assert [d.name for d in read(fabric, "cn002").devices] == ["mlx4_0"]


def test_a_misbuilt_node_has_its_first_card_and_two_gpus_behind_one_uplink_wired_x4(out):
    fabric = Fabric.create(out, 1, seed=3, layout_faults=("cn001:misbuilt",))
    snap = read(fabric, "cn001")
    devices = {d.name: d for d in snap.devices}
    path = devices["mlx5_0"].pcie_path
    uplink = path.hops[2]  # the switch upstream port: the GPUs sit below it too
    assert [(n.kind, n.address, n.via) for n in path.neighbours] == [
        ("gpu", "0000:3c:00.0", uplink.address),
        ("gpu", "0000:3d:00.0", uplink.address),
    ]
    assert links(uplink) == links(path.hops[3]) == (16.0, 4, 16.0, 4)  # at its maximum: built so
    assert links(path.hops[0]) == links(path.hops[1]) == GEN4_X16  # the card's own link is whole
    assert [g.nics for g in snap.gpus] == [{"mlx5_0": "PIX", "mlx5_1": "SYS"}] * 2
    assert devices["mlx5_1"].pcie_path.neighbours == ()


def test_an_uplink_fault_retrains_the_switch_uplink_at_run_time_and_it_trains_back(out, capsys):
    fabric = Fabric.create(out, 1, seed=3)

    def hops(dev="mlx5_0"):
        return [(h.address, h.current_width, h.max_width) for h in {
            d.name: d for d in read(fabric, "cn001").devices
        }[dev].pcie_path.hops]  # fmt: skip

    assert cli(["fault", "--out", out, "add", "cn001/mlx5_0:uplink=x8"]) == 0
    fabric.step(10)
    # The root port and the switch upstream port show the uplink; the card's own link is untouched.
    assert hops() == [
        ("0000:3b:00.0", 16, 16),
        ("0000:3a:00.0", 16, 16),
        ("0000:39:00.0", 8, 16),
        ("0000:38:00.0", 8, 16),
    ]
    assert {w for _, w, _ in hops("mlx5_1")} == {16}
    assert cli(["fault", "--out", out, "add", "cn001/mlx5_0:uplink=GEN3x8"]) == 0
    fabric.step(10)
    gen3 = {d.name: d for d in read(fabric, "cn001").devices}["mlx5_0"].pcie_path.hops[-1]
    assert links(gen3) == (8.0, 8, 16.0, 16)
    assert cli(["fault", "--out", out, "remove", "cn001/mlx5_0:uplink"]) == 0
    fabric.step(10)
    assert hops() == [(a, 16, 16) for a, _, _ in hops()]


def test_a_pcie_fault_trains_the_card_and_the_downstream_port_above_it(out):
    fabric = Fabric.create(out, 1, seed=3)
    fabric.add_fault("cn001/mlx5_0:pcie=GEN3x8")
    fabric.step(10)
    path = {d.name: d for d in read(fabric, "cn001").devices}["mlx5_0"].pcie_path
    assert [links(h) for h in path.hops] == [(8.0, 8, 16.0, 16), (8.0, 8, 16.0, 16), GEN4_X16, GEN4_X16]


def test_virtual_functions_and_a_vanished_card_leave_no_dangling_pci_link(out):
    fabric = Fabric.create(out, 1, seed=3)
    fabric.add_fault("cn001:vfs=2")
    fabric.step(10)
    snap = read_host(os.path.join(fabric.out, "cn001"), host="cn001", use_verbs=False)
    assert {e.reason.split(":")[0] for e in snap.errors} == {"N/A (no PMA)"}
    vf = next(d for d in snap.devices if d.name == "mlx5_2")
    assert [h.address for h in vf.pcie_path.hops] == ["0000:3b:00.1", "0000:3a:00.0", "0000:39:00.0", "0000:38:00.0"]
    fabric.remove_fault("cn001:vfs")
    fabric.add_fault("cn001/mlx5_1:vanish")
    fabric.step(10)
    bus = os.listdir(os.path.join(out, "cn001", "bus", "pci", "devices"))
    assert "0000:3b:00.1" not in bus and "0000:86:00.0" not in bus and "0000:3b:00.0" in bus
    assert [d.name for d in read(fabric, "cn001").devices] == ["mlx5_0"]


def test_a_dgx_node_is_cabled_to_the_switch_fabric(out):
    fabric = Fabric.create(out, 2, seed=3, switches=SwitchOptions(), layout_faults=("cn001:dgx",))
    with open(os.path.join(out, NET_FILE)) as f:
        net = f.read()
    assert all(f'"cn001 mlx5_{i}"' in net for i in range(8))
    assert all(f"cn001/mlx5_{i}/1" in fabric.cabling.by_end for i in range(8))
    assert fabric.faults() == ["cn001:dgx"]


@needs_ibsim
def test_ibsim_trains_each_of_a_dgx_nodes_8_hcas_with_the_port_guid_its_tree_says(tmp_path, request):
    fabric = Fabric.create(str(tmp_path / "sim"), 2, seed=3, switches=SwitchOptions(), layout_faults=("cn001:dgx",))
    links = Ibsim(fabric, request).links()
    snap = read(fabric, "cn001")
    for dev in snap.devices:
        seen = links[(f"cn001 {dev.name}", 1)]
        assert seen["link"] == ("12X", "10.0", "Active", "LinkUp")
        assert int(seen["guid"], 16) == int(dev.ports[0].port_guid, 16)
    assert len(snap.devices) == 8


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cn001/mlx5_0/1:uplink=x8", "a fault of the HCA's PCI function: name NODE or NODE/DEVICE"),
        ("cn001:uplink=x12", "PCIe width must be one of"),
        ("cn001:uplink=fast", "expected GEN<g>x<lanes>"),
        ("cn001/mlx5_0:uplink=GEN5x16", "the PCIe switch uplink above cn001/mlx5_0 supports Gen4 x16 at most"),
        ("cn001:dgx", "give it when the fabric is created (simulate --fresh --fault cn001:dgx)"),
        ("cn001/mlx5_0:misbuilt", "misbuilt reshapes a whole node: name the node alone, e.g. cn001:misbuilt"),
        ("cn001:dgx=1", "dgx takes no value"),
    ],
)
def test_it_refuses_a_bad_pcie_fault_in_words(out, spec, message):
    fabric = Fabric.create(out, 1, seed=3)
    with pytest.raises(FaultError) as e:
        fabric.add_fault(spec)
    assert message in str(e.value)


def test_layout_faults_are_given_at_start_only_and_stay_for_the_fabrics_life(out, capsys):
    assert cli(["simulate", "--out", out, "--nodes", "2", "--once", "--fault", "cn002:misbuilt"]) == 0
    assert cli(["fault", "--out", out, "remove", "cn002:misbuilt"]) == 2
    assert "built into the node's PCIe tree when the fabric was created" in capsys.readouterr().err
    assert cli(["simulate", "--out", out, "--nodes", "2", "--once"]) == 0  # continues, still misbuilt
    capsys.readouterr()
    assert cli(["fault", "--out", out, "list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["cn002:misbuilt"]
    assert cli(["simulate", "--out", out, "--nodes", "2", "--once", "--fault", "cn001:dgx"]) == 2
    assert "cn001:dgx: the fabric in" in capsys.readouterr().err
    with pytest.raises(FaultError, match="a node takes one layout fault"):
        Fabric.create(out, 2, layout_faults=("cn001:dgx", "cn001:misbuilt"))
    with pytest.raises(LayoutError, match="no node 'cn009' in this fabric"):
        Fabric.create(out, 2, layout_faults=("cn009:dgx",))
