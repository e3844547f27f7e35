"""Covers collectors/pcie.py, collectors/local.py, collectors/model.py, collectors/text.py.

PCIe link, network interfaces, local findings and the ibstat-like text, on a host-shaped tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collectors import pcie, read_host
from collectors.local import local_findings
from collectors.model import PciLink
from collectors.text import render_text


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def add_hca(root, dev, bdf, rates, pci=("16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16"), netdevs=(), hca="MT4123"):
    """A device laid out as on a real host: class/infiniband/<dev> -> devices/.../<bdf>/infiniband/<dev>."""
    fn = root / "devices" / "pci0000:00" / bdf
    for name, value in zip(
        ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"), pci, strict=True
    ):
        write(fn / name, value)
    write(fn / "numa_node", "1")
    for ifname, dev_port in netdevs:
        write(fn / "net" / ifname / "dev_port", str(dev_port))
    d = fn / "infiniband" / dev
    write(d / "hca_type", hca)
    write(d / "node_desc", f"cn042 {dev}")
    os.symlink(os.path.relpath(fn, d), d / "device")
    for n, (rate, state, phys) in enumerate(rates, start=1):
        p = d / "ports" / str(n)
        write(p / "rate", rate)
        write(p / "state", state)
        write(p / "phys_state", phys)
        write(p / "link_layer", "InfiniBand")
        write(p / "lid", "0x1a")
        write(p / "sm_lid", "0x1")
        write(p / "lid_mask_count", "0")
        write(p / "cap_mask", "0x2651e848")
    cls = root / "class" / "infiniband"
    cls.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(d, cls), cls / dev)


UP = ("4: ACTIVE", "5: LinkUp")


@pytest.fixture
def host(tmp_path):
    add_hca(tmp_path, "mlx5_0", "0000:3b:00.0", [("200 Gb/sec (4X HDR)", *UP)], netdevs=[("ib0", 0)])
    add_hca(
        tmp_path,
        "mlx5_1",
        "0000:86:00.0",
        [("50 Gb/sec (1X HDR)", *UP)],
        pci=("8.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16"),
        netdevs=[("ib1", 0)],
    )
    add_hca(
        tmp_path,
        "mlx4_0",
        "0000:05:00.0",
        [("40 Gb/sec (4X QDR)", *UP), ("40 Gb/sec (4X QDR)", "2: INIT", "5: LinkUp")],
        pci=("8 GT/s", "8", "8 GT/s", "8"),
        netdevs=[("ib2", 0), ("ib3", 1)],
        hca="MT4099",
    )
    return tmp_path


def test_it_reads_the_pcie_link_behind_the_device(host):
    devs = {d.name: d for d in read_host(str(host), use_verbs=False).devices}
    assert devs["mlx5_0"].pci == PciLink("0000:3b:00.0", 16.0, 16, 16.0, 16, 1)
    assert devs["mlx5_1"].pci == PciLink("0000:86:00.0", 8.0, 8, 16.0, 16, 1)
    assert devs["mlx4_0"].pci.current_gts == 8.0  # older kernels print `8 GT/s`


def test_it_attaches_network_interfaces_to_their_port(host):
    devs = {d.name: d for d in read_host(str(host), use_verbs=False).devices}
    assert devs["mlx5_0"].ports[0].netdevs == ["ib0"]
    assert [p.netdevs for p in devs["mlx4_0"].ports] == [["ib2"], ["ib3"]]
    assert devs["mlx5_0"].ports[0].lid == 0x1A
    assert devs["mlx5_0"].ports[0].cap_mask == 0x2651E848


def test_it_names_pcie_generations_and_bandwidth():
    assert pcie.describe(8.0, 8) == "Gen3 x8"
    assert pcie.describe(32.0, 16) == "Gen5 x16"
    assert round(pcie.usable_gbps(8.0, 8)) == 63
    assert round(pcie.usable_gbps(16.0, 16)) == 252
    assert pcie.usable_gbps(None, 16) is None


def test_it_sees_degradation_locally(host):
    messages = {(f.device, f.port): f.message for f in local_findings(read_host(str(host), use_verbs=False))}
    assert messages == {
        ("mlx5_1", None): "PCIe trained at Gen3 x8, the slot and card support Gen4 x16",
        ("mlx5_1", 1): "trained at 50 Gb/s (1X HDR), expected 200 Gb/s (4X HDR): width downgrade "
        "(1X where 4X expected) (another MT4123 port here runs it)",
        ("mlx4_0", 2): "physically LinkUp but INIT: the subnet manager is not answering",
    }


def test_it_says_a_slow_pcie_link_caps_the_port(tmp_path):
    add_hca(tmp_path, "mlx5_0", "0000:3b:00.0", [("200 Gb/sec (4X HDR)", *UP)], pci=("8.0 GT/s PCIe", "8") * 2)
    (finding,) = local_findings(read_host(str(tmp_path), use_verbs=False))
    assert finding.message == "PCIe Gen3 x8 (~63 Gb/s) limits a 200 Gb/s (4X HDR) port"


def test_the_text_summary_reads_like_ibstat(host):
    text = render_text(read_host(str(host), host="cn042", use_verbs=False))
    assert "CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n" in text
    assert "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200 Gb/sec (4X HDR)\n" in text
    assert "\t\tState: Initializing\n" in text
    assert "\tPCIe: 0000:86:00.0 Gen3 x8 (max Gen4 x16), NUMA node 1\n" in text
    assert "\t\tNetdev: ib3\n" in text
    findings = text.split("Degradation seen on this host:\n")[1]
    assert "\tmlx5_1: PCIe trained at Gen3 x8, the slot and card support Gen4 x16\n" in findings
    assert "\tmlx4_0/2: physically LinkUp but INIT: the subnet manager is not answering\n" in findings


def test_the_text_summary_escapes_device_strings(host):
    (host / "devices/pci0000:00/0000:3b:00.0/infiniband/mlx5_0/node_desc").write_text("cn042\x1b[2J evil\n")
    text = render_text(read_host(str(host), use_verbs=False))
    assert "\x1b" not in text
    assert "Node description: cn042\\x1b[2J evil" in text
