"""Covers collectors/pcitopo.py, collectors/text.py, collectors/facts.py, fabricweb/telemetry/validation/schema.py;
through them collectors/pcimodel.py, collectors/pcipath.py.

The PCIe path of each RDMA device and the GPU x NIC relations, on trees laid out as real machines."""

from __future__ import annotations

import json
import os
import shutil

from collectors import read_host, to_dict
from collectors.pcitopo import matrix, nearest
from collectors.text import render_text
from tests.collectors.sysfs_fixtures import NODE_EXPORTER, PROCFS, flat
from tests.pcie_trees import DGX_A100_MATRIX, DGX_A100_NICS, GPU, HCA, ROOT_PORT, SWITCH, Tree, dgx_a100


def _dgx(tmp_path, **uplink):
    root = str(tmp_path / "sys")
    layout = dgx_a100(root, **uplink)
    return root, layout


def _read(root):
    return read_host(root, host="dgx", use_verbs=False)


def test_the_dgx_a100_matrix_equals_the_published_one_cell_for_cell(tmp_path):
    root, _ = _dgx(tmp_path)
    snap = _read(root)
    names, rows = matrix(snap.gpus)
    assert names == DGX_A100_NICS
    assert [g.address for g in snap.gpus] == [
        f"0000:{b:02x}:00.0" for b in (0x07, 0x0F, 0x47, 0x4F, 0x87, 0x8F, 0xB7, 0xBF)
    ]
    for i, (row, published) in enumerate(zip(rows, DGX_A100_MATRIX, strict=True)):
        assert row == published, f"GPU{i}"
    assert [g.numa_node for g in snap.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert snap.errors == []


def test_each_device_path_runs_hop_by_hop_from_its_function_to_its_root_port(tmp_path):
    root, _ = _dgx(tmp_path)
    devices = {d.name: d for d in _read(root).devices}
    path = devices["mlx5_0"].pcie_path
    assert [(h.address, h.kind) for h in path.hops] == [
        ("0000:0c:00.0", "function"),
        ("0000:0b:00.0", "switch port"),
        ("0000:0a:00.0", "switch port"),
        ("0000:02:04.0", "switch port"),
        ("0000:01:00.0", "switch port"),
        ("0000:00:01.1", "root port"),
    ]
    assert path.host_bridge == "pci0000:00"
    assert {(h.current_gts, h.current_width, h.max_gts, h.max_width) for h in path.hops} == {(16.0, 16, 16.0, 16)}
    assert path.hops[0].vendor == 0x15B3 and path.hops[0].class_code == 0x0207 and path.hops[0].numa_node == 3
    assert [(n.kind, n.name, n.address, n.via) for n in path.neighbours] == [
        ("gpu", None, "0000:07:00.0", "0000:01:00.0"),
        ("gpu", None, "0000:0f:00.0", "0000:0a:00.0"),
        ("rdma", "mlx5_1", "0000:12:00.0", "0000:0a:00.0"),
    ]
    storage = devices["mlx5_4"].pcie_path
    assert [(h.address, h.kind) for h in storage.hops] == [("0000:61:00.0", "function"), ("0000:60:03.1", "root port")]
    assert [(n.name, n.via) for n in storage.neighbours] == [("mlx5_5", "0000:60:03.1")]


def test_a_hop_that_retrains_at_run_time_is_seen_on_the_next_poll_and_when_it_trains_back(tmp_path):
    root, layout = _dgx(tmp_path)
    uplink = layout["quadrants"][0]["uplink"]  # the top switch of GPU0, GPU1, mlx5_0, mlx5_1
    width = os.path.join(uplink, "current_link_width")

    def hop():
        dev = next(d for d in _read(root).devices if d.name == "mlx5_1")
        return next(h for h in dev.pcie_path.hops if h.address == "0000:01:00.0")

    assert (hop().current_width, hop().max_width) == (16, 16)
    with open(width, "w") as f:
        f.write("8\n")
    assert (hop().current_width, hop().max_width) == (8, 16)
    with open(width, "w") as f:
        f.write("16\n")
    assert hop().current_width == 16


def _two_socket(root: str) -> None:
    """An Intel-like two-socket host: GPU and NIC below one switch, others across root ports and sockets."""
    t = Tree(root)
    hb0, hb1, hb2 = t.host_bridge("pci0000:00"), t.host_bridge("pci0000:17"), t.host_bridge("pci0000:80")
    rp = t.function(hb0, "0000:00:02.0", ROOT_PORT, 0)
    dsp = t.switch(rp, 0x01, 0)
    t.rdma(t.function(dsp, "0000:03:00.0", HCA, 0), "mlx5_0")
    other_port = t.function(os.path.dirname(dsp), "0000:02:04.0", SWITCH, 0)
    t.function(other_port, "0000:04:00.0", GPU, 0)  # same switch, another port: PIX
    t.function(t.function(hb0, "0000:00:03.0", ROOT_PORT, 0), "0000:05:00.0", GPU, 0)  # another root port: PHB
    t.function(t.function(hb1, "0000:17:00.0", ROOT_PORT, 0), "0000:18:00.0", GPU, 0)  # same socket: NODE
    t.function(t.function(hb2, "0000:80:01.0", ROOT_PORT, 1), "0000:81:00.0", GPU, 1)  # other socket: SYS
    t.function(t.function(hb2, "0000:80:02.0", ROOT_PORT, -1), "0000:82:00.0", ("0x030000", "0x1002", "0x744c"), -1)


def test_relations_follow_the_nvidia_smi_legend_and_gpus_are_found_by_class_of_any_vendor(tmp_path):
    root = str(tmp_path / "sys")
    _two_socket(root)
    snap = _read(root)
    assert [(g.address, g.vendor, g.nics["mlx5_0"]) for g in snap.gpus] == [
        ("0000:04:00.0", 0x10DE, "PIX"),
        ("0000:05:00.0", 0x10DE, "PHB"),
        ("0000:18:00.0", 0x10DE, "NODE"),
        ("0000:81:00.0", 0x10DE, "SYS"),
        ("0000:82:00.0", 0x1002, "SYS"),  # an AMD display controller; NUMA node unknown: SYS
    ]
    assert nearest(snap.gpus[0]) == ("mlx5_0", "PIX")


def test_the_snapshot_carries_the_path_and_the_gpus_as_optional_keys(tmp_path):
    root, _ = _dgx(tmp_path)
    out = json.loads(json.dumps(to_dict(_read(root))))
    dev = next(d for d in out["devices"] if d["name"] == "mlx5_0")
    assert dev["pcie_path"]["hops"][-1] == {
        "address": "0000:00:01.1",
        "kind": "root port",
        "class_code": 0x0604,
        "vendor": 0x1022,
        "device": 0x1483,
        "current_gts": 16.0,
        "current_width": 16,
        "max_gts": 16.0,
        "max_width": 16,
        "numa_node": 3,
        "local_cpulist": None,
    }
    assert out["gpus"][0]["nics"]["mlx5_0"] == "PXB" and out["gpus"][0]["local_cpulist"] == "48-63,176-191"


def test_the_text_shows_each_path_hop_by_hop_and_the_matrix(tmp_path):
    root, _ = _dgx(tmp_path, width=8)
    text = render_text(_read(root))
    assert (
        "PCIe path: 0000:0c:00.0 mlx5_0 Gen4 x16 \u2190 0000:0b:00.0 switch port Gen4 x16 \u2190 "
        "0000:0a:00.0 switch port Gen4 x16 \u2190 0000:02:04.0 switch port Gen4 x16 \u2190 "
        "0000:01:00.0 switch port Gen4 x8 \u2190 0000:00:01.1 root port Gen4 x8 (pci0000:00)"
    ) in text
    assert "GPUs and RDMA devices (nvidia-smi topo -m words; 8 GPUs):" in text
    row = next(line for line in text.splitlines() if line.startswith("\tGPU6 b7:00.0"))
    assert row.split()[2:] == [*DGX_A100_MATRIX[6], "5"]


def test_a_dangling_parent_link_costs_only_that_function_with_a_read_error(tmp_path):
    root, _ = _dgx(tmp_path)
    bus = os.path.join(root, "bus", "pci", "devices")
    os.symlink("../../../devices/pci0000:00/0000:00:09.0", os.path.join(bus, "0000:00:09.0"))
    snap = _read(root)
    assert [(e.path, e.reason) for e in snap.errors] == [
        (os.path.join(bus, "0000:00:09.0"), "link points nowhere (the PCI function is gone?)")
    ]
    assert matrix(snap.gpus)[1] == DGX_A100_MATRIX


def test_a_symlink_loop_costs_only_that_link_with_a_read_error(tmp_path):
    root, _ = _dgx(tmp_path)
    bus = os.path.join(root, "bus", "pci", "devices")
    os.symlink("0000:00:0a.0", os.path.join(bus, "0000:00:0a.0"))
    snap = _read(root)
    assert [e.reason for e in snap.errors] == ["a symlink loop: the link never reaches a PCI function"]
    assert matrix(snap.gpus)[1] == DGX_A100_MATRIX


def test_an_unreadable_link_file_costs_only_that_value_on_every_poll(tmp_path):
    root, layout = _dgx(tmp_path)
    uplink = layout["quadrants"][0]["uplink"]
    os.remove(os.path.join(uplink, "current_link_width"))
    os.mkdir(os.path.join(uplink, "current_link_width"))  # EISDIR on read
    for _ in range(2):  # the first poll reads the tree's shape, the second only the links
        snap = _read(root)
        hop = next(
            h
            for h in next(d for d in snap.devices if d.name == "mlx5_0").pcie_path.hops
            if h.kind != "function" and h.address == "0000:01:00.0"
        )
        assert (hop.current_gts, hop.current_width) == (16.0, None)
        assert [(e.path, e.reason) for e in snap.errors] == [
            (os.path.join(uplink, "current_link_width"), "a directory where a file should be")
        ]
        assert matrix(snap.gpus)[1] == DGX_A100_MATRIX


# The files of a card's own function that the device reader reads through class/infiniband/<dev>/device each poll.
OWN_FILES = {
    "current_link_speed": "current_gts",
    "current_link_width": "current_width",
    "max_link_speed": "max_gts",
    "max_link_width": "max_width",
    "numa_node": "numa_node",
}


def test_it_reports_a_broken_file_of_a_cards_own_function_once_on_the_scanning_poll_and_after(tmp_path):
    clean_root = str(tmp_path / "clean" / "sys")
    _two_socket(clean_root)  # a GPU of each relation to mlx5_0, NODE among them
    clean = flat(to_dict(read_host(clean_root, host="dgx", use_verbs=False, now=0.0)))
    assert [g["nics"]["mlx5_0"] for g in clean["gpus",]] == ["PIX", "PHB", "NODE", "SYS", "SYS"]
    clean_own = os.path.realpath(os.path.join(clean_root, "class", "infiniband", "mlx5_0", "device"))
    for i, (name, key) in enumerate(OWN_FILES.items()):
        root = str(tmp_path / str(i) / "sys")  # a root of its own, broken before its first read: that read scans
        _two_socket(root)
        want = {**clean, ("source", "sysfs_root"): root}
        own = os.path.realpath(os.path.join(root, "class", "infiniband", "mlx5_0", "device"))
        os.remove(os.path.join(own, name))
        os.mkdir(os.path.join(own, name))  # EISDIR on read
        # What it costs: that value (the snapshot's path starts above the card's own function, which `pci` holds);
        # an unknown NUMA node also makes the card SYS to the GPUs it was NODE to, as nvidia-smi says.
        want["devices", "mlx5_0", "pci", key] = None
        if key == "numa_node":
            want["gpus",] = [{**g, "nics": {**g["nics"]}} for g in clean["gpus",]]
            for gpu in want["gpus",]:
                gpu["nics"]["mlx5_0"] = "SYS" if gpu["nics"]["mlx5_0"] == "NODE" else gpu["nics"]["mlx5_0"]
        where = os.path.join(root, "class", "infiniband", "mlx5_0", "device", name)
        for poll in ("scanning", "warm"):
            snap = read_host(root, host="dgx", use_verbs=False, now=0.0)
            assert [(e.path, e.reason) for e in snap.errors] == [(where, "a directory where a file should be")], poll
            out = flat(to_dict(snap))
            assert {k: v for k, v in out.items() if k != ("errors",)} == {
                k: v for k, v in want.items() if k != ("errors",)
            }, (name, poll)
            card = next(d for d in snap.devices if d.name == "mlx5_0")
            assert getattr(card.pcie_path.hops[0], key) is None, (name, poll)  # the text's first hop: the same value
        os.rmdir(os.path.join(own, name))
        shutil.copy(os.path.join(clean_own, name), own)  # mended: the value is back, and the relations with it
        mended = to_dict(read_host(root, host="dgx", use_verbs=False, now=0.0))
        assert mended["errors"] == [] and flat(mended) == {**clean, ("source", "sysfs_root"): root}, name


def test_the_real_hardware_fixtures_read_as_before_with_the_path_unknown():
    for root in (PROCFS, NODE_EXPORTER):
        snap = read_host(str(root), host="fixture", use_verbs=False)
        out = to_dict(snap)
        assert all("pcie_path" not in d for d in out["devices"]) and "gpus" not in out
        assert all(d.pcie_path is None for d in snap.devices)
        assert not any("pci" in e.path for e in snap.errors)


def test_a_path_deeper_than_a_snapshot_carries_is_left_out_with_a_read_error_and_the_rest_is_sent(tmp_path):
    from datetime import UTC, datetime

    from collectors.facts import MAX_PCIE_HOPS
    from fabricweb.telemetry.validation.schema import parse_snapshot

    root = str(tmp_path / "sys")
    t = Tree(root)
    below = t.function(t.host_bridge("pci0000:00"), "0000:00:01.0", ROOT_PORT, 0)
    for bus in range(1, MAX_PCIE_HOPS + 4):  # the root port and 19 switch ports: no real host nests so deep
        below = t.function(below, f"0000:{bus:02x}:00.0", SWITCH, 0)
    card = t.function(below, f"0000:{MAX_PCIE_HOPS + 4:02x}:00.0", HCA, 0)
    t.rdma(card, "mlx5_0")
    snap = _read(root)
    (device,) = snap.devices
    assert device.pcie_path is None and device.pci.current_width == 16
    assert [e.reason for e in snap.errors] == [
        f"{MAX_PCIE_HOPS + 4} bridges above it, more than {MAX_PCIE_HOPS}: path left out"
    ]
    assert snap.errors[0].path == card
    parsed = parse_snapshot(to_dict(snap), datetime.now(UTC))  # the server takes the rest: the port, the error
    assert [d.name for d in parsed.devices] == ["mlx5_0"] and parsed.devices[0].attrs["pcie_path"] is None


def test_a_bmcs_vga_is_no_gpu_and_the_numbering_stays_nvidia_smis(tmp_path):
    root, _ = _dgx(tmp_path)
    # The ASPEED AST2600 of the server's BMC: a VGA function on a root port of its own, between GPU0 and GPU1.
    t = Tree(root)
    bmc_port = t.function(t.host_bridge("pci0000:00"), "0000:00:03.1", ROOT_PORT, 3)
    t.function(bmc_port, "0000:08:00.0", ("0x030000", "0x1a03", "0x2000"), 3, speed=2.5, width=1)
    # A Matrox VGA below the first quadrant's switch, where it would share the NICs' hops.
    t.function(os.path.join(root, "devices", "pci0000:00", "0000:00:01.1", "0000:01:00.0"), "0000:01:08.0",
               ("0x030000", "0x102b", "0x0536"), 3)  # fmt: skip
    snap = _read(root)
    assert [g.address for g in snap.gpus] == [
        f"0000:{b:02x}:00.0" for b in (0x07, 0x0F, 0x47, 0x4F, 0x87, 0x8F, 0xB7, 0xBF)
    ]
    names, rows = matrix(snap.gpus)
    assert names == DGX_A100_NICS and rows == DGX_A100_MATRIX  # nvidia-smi topo -m, row for row
    devices = {d.name: d for d in snap.devices}
    assert all(
        n.address not in ("0000:02:00.0", "0000:01:08.0") for d in devices.values() for n in d.pcie_path.neighbours
    )


def test_the_text_names_a_narrow_uplink_above_a_card_in_the_health_findings_words(tmp_path):
    root, _ = _dgx(tmp_path, width=8)  # the first quadrant's root port and switch uplink train at x8
    text = render_text(_read(root))
    said = "PCIe switch uplink 0000:01:00.0 trained Gen4 x8 (~126 Gb/s), limits a 200 Gb/s (4X HDR) port"
    # Each card below it, in the words of the health finding (tests/health/test_health_pciepath.py).
    assert f"\tmlx5_0: {said}" in text and f"\tmlx5_1: {said}" in text
    assert "mlx5_2: PCIe switch uplink" not in text  # another quadrant's cards: full width above them
