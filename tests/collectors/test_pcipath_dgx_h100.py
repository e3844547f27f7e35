"""Covers collectors/pcitopo.py, collectors/text.py; through them collectors/pcimodel.py.

The reader on a second published server beside the DGX A100: a DGX H100, NVIDIA's HGX H100 8-GPU
design, with its BMC's VGA and a cascade of PCIe switches between each GPU and its card. Sources: tests/pcie_dgx_h100.py
(NVIDIA's DGX H100/H200 User Guide, "Network Ports"; the published `nvidia-smi topo -m` in vllm-project/vllm#6746)."""

from __future__ import annotations

from collectors import read_host
from collectors.pcitopo import matrix
from collectors.text import render_text
from tests.pcie_dgx_h100 import DGX_H100_GPUS, DGX_H100_MATRIX, DGX_H100_NICS, dgx_h100


def _read(tmp_path):
    root = str(tmp_path / "sys")
    layout = dgx_h100(root)
    return read_host(root, host="dgx-h100", use_verbs=False), layout


def test_it_computes_the_published_dgx_h100_matrix_row_for_row(tmp_path):
    snap, _ = _read(tmp_path)
    names, rows = matrix(snap.gpus)
    assert names == DGX_H100_NICS
    assert [g.address for g in snap.gpus] == DGX_H100_GPUS  # nvidia-smi's GPU0-GPU7: PCI bus order
    for i, (row, published) in enumerate(zip(rows, DGX_H100_MATRIX, strict=True)):
        assert row == published, f"GPU{i}"
    assert [g.numa_node for g in snap.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [g.local_cpulist for g in snap.gpus[3:5]] == ["0-55,112-167", "56-111,168-223"]
    assert snap.errors == []


def test_it_keeps_the_bmcs_vga_out_of_the_gpus_and_every_path(tmp_path):
    snap, layout = _read(tmp_path)
    assert layout["bmc"] == "0000:03:00.0"  # on a bus before every GPU: counted, it would be GPU0
    assert "0000:03:00.0" not in [g.address for g in snap.gpus]
    assert all(n.address != "0000:03:00.0" for d in snap.devices for n in d.pcie_path.neighbours)
    assert all(g.vendor == 0x10DE and g.class_code == 0x0302 for g in snap.gpus)


def test_it_reads_a_cards_path_and_its_gpu_through_the_cascaded_switch(tmp_path):
    snap, _ = _read(tmp_path)
    path = {d.name: d for d in snap.devices}["mlx5_0"].pcie_path
    assert [(h.address, h.kind) for h in path.hops] == [
        ("0000:18:00.0", "function"),
        ("0000:17:00.0", "switch port"),
        ("0000:16:00.0", "switch port"),  # switch A's upstream port: the uplink
        ("0000:15:01.0", "root port"),
    ]
    assert {(h.current_gts, h.current_width) for h in path.hops} == {(32.0, 16)}
    # GPU0 sits below switch B, cascaded below switch A: it shares switch A's uplink with mlx5_0 (PXB).
    assert [(n.kind, n.address, n.via) for n in path.neighbours] == [("gpu", "0000:1b:00.0", "0000:16:00.0")]
    storage = {d.name: d for d in snap.devices}["mlx5_1"].pcie_path
    assert [(n.name, n.via) for n in storage.neighbours] == [("mlx5_2", "0000:28:01.0")]


def test_it_prints_the_published_rows_in_the_text_output(tmp_path):
    snap, _ = _read(tmp_path)
    text = render_text(snap)
    assert "GPUs and RDMA devices (nvidia-smi topo -m words; 8 GPUs):" in text
    for i, address in enumerate(DGX_H100_GPUS):
        row = next(line for line in text.splitlines() if line.startswith(f"\tGPU{i} {address[5:]}"))
        assert row.split()[2:] == [*DGX_H100_MATRIX[i], str(i // 4)]
