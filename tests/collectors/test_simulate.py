"""Covers collectors/__main__.py, collectors/link.py, collectors/model.py, collectors/sim/, collectors/sim/hardware.py,
collectors/sim/layout.py; through them collectors/mads/routes.py, collectors/mads/umad.py,
collectors/sim/rendering.py, collectors/sim/roce.py, collectors/sim/simstate.py, collectors/sim/sriov.py,
collectors/sim/switchside.py, collectors/sim/traffic.py, collectors/simulate.py.

The simulator: its trees read back through collectors.read_host exactly as real ones do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from collectors import read_host, to_dict
from collectors.__main__ import main as cli
from collectors.link import Rate
from collectors.model import Enum
from collectors.sim import Fabric, FaultError, SimError
from collectors.sim.hardware import COUNTERS
from collectors.sim.layout import build
from harness import wait_for

ROOT = Path(__file__).resolve().parents[2]
ACTIVE, LINK_UP = Enum(4, "ACTIVE"), Enum(5, "LinkUp")
DOWN, POLLING, DISABLED = Enum(1, "DOWN"), Enum(2, "Polling"), Enum(3, "Disabled")
HDR = Rate(200.0, 4, "HDR")


@pytest.fixture
def fabric(tmp_path):
    return Fabric.create(str(tmp_path / "sim"), 4, seed=3)


def node_of(fabric, kind):
    return next(n.name for n in fabric.layout.nodes if n.kind == kind)


def read(fabric, node):
    return read_host(os.path.join(fabric.out, node), host=node, use_verbs=False)


def port(fabric, node, dev="mlx5_0", number=1):
    snap = read(fabric, node)
    assert snap.errors == []
    d = next(d for d in snap.devices if d.name == dev)
    return next(p for p in d.ports if p.number == number)


def delta(fabric, node, seconds=10.0, dev="mlx5_0", number=1, what="counters"):
    """Counter changes over one step of `seconds`, and the port after it."""
    before = getattr(port(fabric, node, dev, number), what)
    fabric.step(seconds)
    after = port(fabric, node, dev, number)
    return {k: after_v - before[k] for k, after_v in getattr(after, what).items()}, after


def tree_bytes(root):
    """Every file's bytes and every link's target under root, for byte-for-byte comparison."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isfile(path) and not rel.endswith(".simlock"):
                out[rel] = Path(path).read_bytes()
    return out


# -- the fabric mix and the tree's shape --------------------------------------------------------


def test_every_fabric_of_four_or_more_nodes_has_each_kind():
    for seed in range(10):
        for nodes in (4, 5, 9, 30):
            kinds = [n.kind for n in build(seed, nodes).nodes]
            assert set(kinds) == {"cx6", "cx7", "cx3", "roce"}
            assert kinds[0] == "cx6"
    kinds = [n.kind for n in build(1, 100).nodes]
    assert kinds.count("cx6") > 50  # mostly ConnectX-6


def test_it_writes_each_kind_as_the_reader_expects(fabric):
    seen = {}
    for node in fabric.layout.nodes:
        snap = read(fabric, node.name)
        assert snap.errors == []
        dev = snap.devices[0]
        seen[node.kind] = (dev.hca_type, dev.ports[0].rate, dev.ports[0].link_layer, len(dev.ports))
        assert dev.node_type == Enum(1, "CA")
        assert dev.node_desc == f"{node.name} {dev.name}"
    assert seen["cx6"] == ("MT4123", HDR, "InfiniBand", 1)
    assert seen["cx7"] == ("MT4129", Rate(400.0, 4, "NDR"), "InfiniBand", 1)
    assert seen["roce"] == ("MT4125", Rate(100.0, 4, "EDR"), "Ethernet", 1)
    hca, rate, layer, ports = seen["cx3"]
    assert (hca, layer, ports) == ("MT4099", "InfiniBand", 2)
    assert rate in (Rate(40.0, 4, "QDR"), Rate(40.0, 4, "FDR10"))


def test_connectx3_caps_its_32_bit_counters_and_keeps_64_bit_ones_in_counters_ext(fabric):
    node = node_of(fabric, "cx3")
    changes, p = delta(fabric, node, dev="mlx4_0")
    assert {"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"} <= set(p.capped)
    assert p.counters["port_xmit_data"] == (2**32 - 1) * 4  # stopped at all-ones, in bytes
    assert changes["port_xmit_data"] == 0  # a capped counter does not move...
    assert p.counters_ext["port_xmit_data_64"] > p.counters["port_xmit_data"]
    ext_changes, _ = delta(fabric, node, dev="mlx4_0", what="counters_ext")
    assert ext_changes["port_xmit_data_64"] > 0  # ...its 64-bit twin does
    assert set(p.counters_ext) == {
        "port_xmit_data_64", "port_rcv_data_64", "port_xmit_packets_64", "port_rcv_packets_64",
        "port_unicast_xmit_packets", "port_unicast_rcv_packets",
        "port_multicast_xmit_packets", "port_multicast_rcv_packets",
    }  # fmt: skip
    assert p.hw_counters == {}


def test_mlx5_ports_have_64_bit_data_counters_and_hw_counters(fabric):
    p = port(fabric, node_of(fabric, "cx6"))
    assert p.capped == []
    assert p.counters["port_xmit_data"] > 2**32 * 4
    assert p.counters_ext == {}
    assert {"out_of_buffer", "rnr_nak_retry_err", "local_ack_timeout_err", "duplicate_request"} <= set(p.hw_counters)
    assert "lifespan" not in p.hw_counters  # the reader skips it; the file says 10 (ms)
    assert "np_cnp_sent" not in p.hw_counters


def test_roce_ports_are_ethernet_with_congestion_counters(fabric):
    p = port(fabric, node_of(fabric, "roce"))
    assert p.link_layer == "Ethernet"
    assert (p.lid, p.sm_lid) == (0, 0)
    assert {"np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets"} <= set(p.hw_counters)
    assert p.netdevs == ["enp59s0f0np0"]


def test_netdevs_are_attached_to_their_ports(tmp_path):
    fabric = Fabric.create(str(tmp_path / "sim"), 4, ports=2, seed=3)
    cx6 = {d.name: d for d in read(fabric, node_of(fabric, "cx6")).devices}
    assert [p.netdevs for p in cx6["mlx5_0"].ports] == [["ib0"], ["ib1"]]
    assert [p.netdevs for p in cx6["mlx5_1"].ports] == [["ib2"], ["ib3"]]
    assert all(p.hw_counters for d in cx6.values() for p in d.ports)  # 2 HCAs x 2 ports with hw_counters
    (cx3,) = read(fabric, node_of(fabric, "cx3")).devices
    assert [p.netdevs for p in cx3.ports] == [["ib0"], ["ib1"]]


def test_a_snapshot_of_a_simulated_tree_has_no_errors(fabric):
    fabric.step(10)
    for node in fabric.layout.nodes:
        d = to_dict(read(fabric, node.name))
        assert d["errors"] == []
        json.dumps(d)
        for dev in d["devices"]:
            assert dev["pci"]["current_gts"] == dev["pci"]["max_gts"]
            assert all(v is not None for p in dev["ports"] for v in p["counters"].values())


def test_the_tree_has_the_kernels_shape(fabric):
    root = Path(fabric.out) / "cn001"
    link = root / "class" / "infiniband" / "mlx5_0"
    # Below a PCIe switch (upstream port 39:00.0, downstream port 3a:00.0) on root port 38:00.0.
    pci_rel = "devices/pci0000:38/0000:38:00.0/0000:39:00.0/0000:3a:00.0/0000:3b:00.0"
    assert os.readlink(link) == f"../../{pci_rel}/infiniband/mlx5_0"
    assert os.readlink(link / "device") == "../../../0000:3b:00.0"
    assert os.readlink(root / "bus" / "pci" / "devices" / "0000:3b:00.0") == f"../../../{pci_rel}"
    pci = root / pci_rel
    assert (pci / "class").read_text() == "0x020700\n"
    assert (pci / "current_link_speed").read_text() == "16.0 GT/s PCIe\n"
    assert (pci / "max_link_width").read_text() == "16\n"
    assert (pci / "net" / "ib0" / "dev_port").read_text() == "0\n"
    assert (link / "ports" / "1" / "state").read_text() == "4: ACTIVE\n"
    assert (link / "ports" / "1" / "hw_counters" / "lifespan").read_text() == "10\n"
    assert (link / "sys_image_guid").read_text().count(":") == 3
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            text = path.read_text()
            assert text.endswith("\n") and text.count("\n") == 1, path
            assert not path.name.startswith("."), path  # no temp file ever lands in the tree


def test_counters_advance_with_the_link_rate(fabric):
    node = node_of(fabric, "cx6")
    changes, p = delta(fabric, node, seconds=10)
    limit = p.rate.bytes_per_second * 10
    for direction in ("xmit", "rcv"):
        data, packets = changes[f"port_{direction}_data"], changes[f"port_{direction}_packets"]
        assert 0 < data < 0.9 * limit + 4
        assert 1024 <= data / packets <= 4096
        assert changes[f"unicast_{direction}_packets"] + changes[f"multicast_{direction}_packets"] == packets
        assert 0 < changes[f"multicast_{direction}_packets"] < packets / 100
    assert 0 <= changes["port_xmit_wait"] < 20000
    errors = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards")
    assert all(changes[name] == 0 for name in errors)
    # Utilisation differs per port and from step to step.
    again, _ = delta(fabric, node, seconds=10)
    other, _ = delta(fabric, node, seconds=10, dev="mlx5_1")
    assert len({changes["port_xmit_data"], again["port_xmit_data"], other["port_xmit_data"]}) == 3


def test_a_reader_never_sees_a_torn_or_missing_value_while_it_steps(fabric):
    node = node_of(fabric, "cx6")
    stop = threading.Event()

    def stepping():
        while not stop.is_set():
            fabric.step(10)

    worker = threading.Thread(target=stepping)
    worker.start()
    try:
        deadline, reads = time.monotonic() + 1.0, 0
        while time.monotonic() < deadline:
            snap = read(fabric, node)
            assert snap.errors == []
            assert all(v is not None for d in snap.devices for p in d.ports for v in p.counters.values())
            assert sorted(snap.devices[0].ports[0].counters) == sorted(COUNTERS)  # no temp file shows
            reads += 1
    finally:
        stop.set()
        worker.join()
    assert reads > 10 and fabric.steps > 2


# -- determinism and state ----------------------------------------------------------------------


def test_the_same_seed_and_steps_give_byte_identical_trees(tmp_path):
    trees = []
    for name in ("a", "b"):
        f = Fabric.create(str(tmp_path / name), 5, seed=11)
        f.add_fault("cn002:flap", "cn001/mlx5_1/1:symbol-errors=3/s")
        for _ in range(3):
            f.step(10)
        f.remove_fault("cn002:flap")
        f.step(7.5)
        trees.append(tree_bytes(tmp_path / name))
    assert trees[0] == trees[1]
    Fabric.create(str(tmp_path / "c"), 5, seed=12)
    guid = "cn001/devices/pci0000:38/0000:38:00.0/0000:39:00.0/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/node_guid"
    assert tree_bytes(tmp_path / "c")[guid] != trees[0][guid]  # another seed, another fabric


def test_once_continues_from_the_saved_state(tmp_path):
    args = ["simulate", "--out", str(tmp_path / "cli"), "--nodes", "4", "--seed", "5", "--once", "--interval", "30"]
    assert cli([*args, "--fault", "cn001/mlx5_0/1:symbol-errors=1/s"]) == 0
    assert cli(args) == 0
    api = Fabric.create(str(tmp_path / "api"), 4, seed=5)
    api.add_fault("cn001/mlx5_0/1:symbol-errors=1/s")
    api.step(30)
    api.step(30)
    assert tree_bytes(tmp_path / "cli") == tree_bytes(tmp_path / "api")
    assert Fabric.load(str(tmp_path / "cli")).clock == 60


def test_it_refuses_to_continue_a_fabric_with_other_options(tmp_path, capsys):
    out = str(tmp_path / "sim")
    Fabric.create(out, 4, seed=1)
    with pytest.raises(SimError, match="same options"):
        Fabric.open(out, 5, seed=1)
    assert cli(["simulate", "--out", out, "--nodes", "4", "--seed", "2", "--once"]) == 2
    assert "--fresh" in capsys.readouterr().err
    assert Fabric.open(out, 6, seed=2, fresh=True).layout.nodes[-1].name == "cn006"


# -- faults: every kind, seen by the reader, and gone again -------------------------------------


def assert_normal(fabric, node, dev="mlx5_0", number=1, rate=HDR):
    changes, p = delta(fabric, node, dev=dev, number=number)
    assert (p.state, p.phys_state, p.rate) == (ACTIVE, LINK_UP, rate)
    assert changes["port_xmit_data"] > 0
    assert changes["symbol_error"] == changes["link_downed"] == changes["link_error_recovery"] == 0


def test_it_takes_a_port_down_and_counts_the_link_down(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:down")
    changes, p = delta(fabric, node)
    assert (p.state, p.phys_state) == (DOWN, POLLING)
    assert changes["link_downed"] == 1
    assert changes["port_xmit_data"] == changes["port_rcv_packets"] == 0  # traffic stops
    changes, _ = delta(fabric, node)
    assert changes["link_downed"] == 0  # one down event, not one per poll
    assert port(fabric, node, "mlx5_1").state == ACTIVE
    fabric.remove_fault(f"{node}/mlx5_0/1:down")
    assert_normal(fabric, node)


def test_it_disables_a_port(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:disabled")
    changes, p = delta(fabric, node)
    assert (p.state, p.phys_state) == (DOWN, DISABLED)
    assert changes["port_xmit_data"] == 0
    fabric.remove_fault(f"{node}/mlx5_0/1:disabled")
    assert_normal(fabric, node)


def test_it_trains_a_port_at_a_lower_speed(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:speed=QDR")
    changes, p = delta(fabric, node)
    assert p.rate == Rate(40.0, 4, "QDR")
    assert changes["port_xmit_data"] < p.rate.bytes_per_second * 10  # traffic fits the slower link
    fabric.remove_fault(f"{node}/mlx5_0/1:speed")
    assert_normal(fabric, node)


def test_it_drops_width_to_one_lane(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:width=1X")
    _, p = delta(fabric, node)
    assert p.rate == Rate(50.0, 1, "HDR")
    fabric.remove_fault(f"{node}/mlx5_0/1:width=1X")
    assert_normal(fabric, node)


@pytest.mark.parametrize(("rate", "seconds", "expected"), [("50/h", 3600, 50), ("10/s", 10, 100), ("3/min", 600, 30)])
def test_it_adds_symbol_errors_at_the_given_rate(fabric, rate, seconds, expected):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:symbol-errors={rate}")
    total = 0
    for _ in range(10):  # in ten steps, so fractions carry over
        changes, _ = delta(fabric, node, seconds=seconds / 10)
        total += changes["symbol_error"]
    assert total == expected
    fabric.remove_fault(f"{node}/mlx5_0/1:symbol-errors")
    assert_normal(fabric, node)


@pytest.mark.parametrize(
    ("kind", "counter"),
    [
        ("rcv-errors", "port_rcv_errors"),
        ("remote-errors", "port_rcv_remote_physical_errors"),
        ("discards", "port_xmit_discards"),
    ],
)
def test_it_adds_other_errors_at_the_given_rate(fabric, kind, counter):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:{kind}=2/s")
    changes, _ = delta(fabric, node, seconds=10)
    assert changes[counter] == 20
    assert changes["symbol_error"] == 0
    fabric.remove_fault(f"{node}/mlx5_0/1:{kind}")
    assert_normal(fabric, node)


def test_a_flapping_link_alternates_and_counts_recoveries(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:flap")
    states, recoveries, downs = [], 0, 0
    for _ in range(6):
        changes, p = delta(fabric, node, seconds=10)
        states.append((p.state, p.phys_state))
        recoveries += changes["link_error_recovery"]
        downs += changes["link_downed"]
    assert states == [(DOWN, POLLING), (ACTIVE, LINK_UP)] * 3
    assert recoveries == 6  # 6 per simulated minute
    assert downs == 3  # one per time it went down
    fabric.remove_fault(f"{node}/mlx5_0/1:flap")
    assert_normal(fabric, node)
    assert_normal(fabric, node)


def test_a_reset_clears_the_port_counters_once(fabric):
    node = node_of(fabric, "cx6")
    before = port(fabric, node)
    fabric.add_fault(f"{node}/mlx5_0/1:reset")
    changes, p = delta(fabric, node)
    assert changes["port_xmit_data"] < 0 and changes["unicast_rcv_packets"] < 0  # counters went down: a reset
    assert 0 < p.counters["port_xmit_data"] < before.counters["port_xmit_data"]
    assert p.hw_counters["rx_write_requests"] >= before.hw_counters["rx_write_requests"]  # not a PMA counter
    changes, _ = delta(fabric, node)
    assert changes["port_xmit_data"] > 0  # one-shot: it continues from there while the fault stays
    fabric.remove_fault(f"{node}/mlx5_0/1:reset")
    assert_normal(fabric, node)


def test_a_saturated_port_runs_at_full_rate_and_caps_its_32_bit_counters(fabric):
    node, cx3 = node_of(fabric, "cx6"), node_of(fabric, "cx3")
    fabric.add_fault(f"{node}/mlx5_0/1:saturate", f"{cx3}:saturate")
    changes, p = delta(fabric, node, seconds=10)
    assert changes["port_xmit_data"] == pytest.approx(p.rate.bytes_per_second * 10, rel=1e-6)
    assert changes["port_xmit_wait"] > 100_000_000
    fabric.step(120)
    assert "port_xmit_wait" in port(fabric, node).capped
    assert {"port_xmit_data", "port_xmit_wait"} <= set(port(fabric, cx3, "mlx4_0", 2).capped)
    fabric.remove_fault(f"{node}/mlx5_0/1:saturate")
    changes, _ = delta(fabric, node, seconds=10)
    assert changes["port_xmit_data"] < 0.9 * p.rate.bytes_per_second * 10 + 4


def test_a_slow_pcie_link_shows_and_caps_the_traffic(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0:pcie=GEN3x8")
    fabric.step(10)
    dev = next(d for d in read(fabric, node).devices if d.name == "mlx5_0")
    assert (dev.pci.current_gts, dev.pci.current_width, dev.pci.max_gts, dev.pci.max_width) == (8.0, 8, 16.0, 16)
    fabric.add_fault(f"{node}/mlx5_0/1:saturate")
    changes, p = delta(fabric, node)
    assert p.rate == HDR  # the IB link still says 200 Gb/s...
    assert changes["port_xmit_data"] * 8 / 10 < 64e9  # ...but PCIe Gen3 x8 carries ~63 Gb/s
    fabric.remove_fault(f"{node}/mlx5_0:pcie", f"{node}/mlx5_0/1:saturate")
    fabric.step(10)
    dev = next(d for d in read(fabric, node).devices if d.name == "mlx5_0")
    assert (dev.pci.current_gts, dev.pci.current_width) == (16.0, 16)
    assert_normal(fabric, node)


def test_a_vanished_node_disappears_and_comes_back_as_after_a_reboot(fabric):
    node = node_of(fabric, "cx7")
    before = port(fabric, node)
    fabric.add_fault(f"{node}:vanish")
    fabric.step(10)
    assert not os.path.exists(os.path.join(fabric.out, node))
    assert read(fabric, node).devices == []
    fabric.remove_fault(f"{node}:vanish")
    fabric.step(10)
    p = port(fabric, node)
    assert p.counters["port_xmit_data"] < before.counters["port_xmit_data"]  # rebooted: counters restarted
    assert_normal(fabric, node, rate=Rate(400.0, 4, "NDR"))


def test_a_vanished_device_or_port_leaves_the_rest(fabric):
    node = node_of(fabric, "cx3")
    fabric.add_fault(f"{node}/mlx4_0/2:vanish")
    fabric.step(10)
    (dev,) = read(fabric, node).devices
    assert [p.number for p in dev.ports] == [1]
    assert dev.ports[0].netdevs == ["ib0"]
    cx6 = node_of(fabric, "cx6")
    fabric.add_fault(f"{cx6}/mlx5_0:vanish")
    fabric.step(10)
    snap = read(fabric, cx6)
    assert [d.name for d in snap.devices] == ["mlx5_1"] and snap.errors == []
    fabric.clear_faults()
    fabric.step(10)
    assert [p.number for p in read(fabric, node).devices[0].ports] == [1, 2]
    assert_normal(fabric, cx6)


def test_a_node_fault_applies_to_all_its_ports(fabric):
    node = node_of(fabric, "cx3")
    fabric.add_fault(f"{node}:down")
    fabric.step(10)
    assert [p.state for p in read(fabric, node).devices[0].ports] == [DOWN, DOWN]


def test_counters_stop_at_all_ones_and_never_wrap(fabric):
    node = node_of(fabric, "cx6")
    fabric.add_fault(f"{node}/mlx5_0/1:flap", f"{node}/mlx5_0/1:symbol-errors=1000/s")
    fabric.step(4000)
    fabric.step(4000)
    p = port(fabric, node)
    assert p.counters["link_error_recovery"] == 255
    assert p.counters["symbol_error"] == 65535
    assert {"link_error_recovery", "symbol_error"} <= set(p.capped)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cn999/mlx5_0/1:down", "no node 'cn999'"),
        ("cn001/mlx5_7:down", "cn001 has no device 'mlx5_7' (it has mlx5_0, mlx5_1)"),
        ("cn001/mlx5_0/3:down", "cn001/mlx5_0 has no port 3 (it has 1)"),
        ("cn001:melt", "unknown fault kind"),
        ("cn001:speed", "needs a value"),
        ("cn001:speed=QQR", "not an InfiniBand speed"),
        ("cn001:width=3X", "not an InfiniBand width"),
        ("cn001:down=1", "takes no value"),
        ("cn001/mlx5_0/1:pcie=GEN3x8", "PCI function"),
        ("cn001:pcie=GEN9x8", "generation"),
        ("cn001:symbol-errors=5/day", "per second"),
        ("cn001 down", "expected NODE"),
    ],
)
def test_a_bad_fault_is_a_clear_error(fabric, spec, message):
    with pytest.raises(FaultError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fabric.add_fault(spec)
    assert fabric.faults() == []


def test_the_fault_command_adds_lists_removes_and_clears(fabric, capsys):
    out = fabric.out
    assert cli(["fault", "--out", out, "add", "cn001/mlx5_0/1:speed=qdr", "cn001:symbol-errors=50/h"]) == 0
    assert cli(["fault", "--out", out, "add", "cn001/mlx5_0/1:speed=EDR"]) == 0  # replaces the QDR one
    capsys.readouterr()
    assert cli(["fault", "--out", out, "list"]) == 0
    assert capsys.readouterr().out.split() == ["cn001:symbol-errors=50/h", "cn001/mlx5_0/1:speed=EDR"]
    assert cli(["fault", "--out", out, "remove", "cn001:symbol-errors"]) == 0
    assert cli(["fault", "--out", out, "remove", "cn001:down"]) == 2
    assert "no active fault matches" in capsys.readouterr().err
    assert cli(["fault", "--out", out, "add", "cn042:down"]) == 2
    assert "no node 'cn042'" in capsys.readouterr().err
    assert cli(["fault", "--out", out, "clear"]) == 0
    assert fabric.faults() == []


# -- a running simulator ----------------------------------------------------------------------


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "collectors", *args], cwd=ROOT, capture_output=True, text=True, timeout=20
    )


def reads(path, text) -> bool:
    try:
        return Path(path).read_text() == text
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_running_simulator_follows_fault_commands_and_stops_on_a_signal(tmp_path, sig):
    out = str(tmp_path / "sim")
    proc = subprocess.Popen(
        [sys.executable, "-m", "collectors", "simulate", "--out", out, "--nodes", "4", "--interval", "0.1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        state = os.path.join(out, "cn001", "class", "infiniband", "mlx5_0", "ports", "1", "state")
        wait_for("the port ACTIVE", lambda: reads(state, "4: ACTIVE\n"))
        assert run_cli("simulate", "--out", out, "--nodes", "4", "--once").returncode == 2  # one simulator per DIR
        r = run_cli("fault", "--out", out, "add", "cn001/mlx5_0/1:down")
        assert r.returncode == 0, r.stderr
        wait_for("the port DOWN", lambda: reads(state, "1: DOWN\n"))
        assert run_cli("fault", "--out", out, "remove", "cn001/mlx5_0/1:down").returncode == 0
        wait_for("the port ACTIVE again", lambda: reads(state, "4: ACTIVE\n"))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopped at step" in err
    assert "Traceback" not in err
    assert Fabric.load(out).steps > 0
