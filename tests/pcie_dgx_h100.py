"""A DGX H100 (NVIDIA's HGX H100 8-GPU design) written as a sysfs tree with tests/pcie_trees.py's Tree.

What it must show, and where each fact comes from (the facts carried over, none of the text):

- NVIDIA DGX H100/H200 User Guide, "Network Ports" / "Network Modules" table
  (https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html): each GPU's own ConnectX-7,
  its interface name (so its PCI bus) and its CPU: GPU0 mlx5_0 ibp24s0 (bus 0x18), GPU1 mlx5_3 ibp64s0 (0x40),
  GPU2 mlx5_4 ibp79s0 (0x4f), GPU3 mlx5_5 ibp94s0 (0x5e) on CPU 0; GPU4 mlx5_6 ibp154s0 (0x9a), GPU5 mlx5_9
  ibp192s0 (0xc0), GPU6 mlx5_10 ibp206s0 (0xce), GPU7 mlx5_11 ibp220s0 (0xdc) on CPU 1. NVIDIA's DGX BasePOD
  deployment guide (docs.nvidia.com/dgx-basepod/deployment-guide-dgx-basepod/latest/sriov.html) configures
  the same eight buses (dc 9a ce c0 4f 40 5e 18).
- `nvidia-smi topo -m` of a DGX H100 (2 x 56-core Xeon: CPU affinity 0-55,112-167 and 56-111,168-223) in
  https://github.com/vllm-project/vllm/issues/6746: each GPU PXB to its own NIC, NODE to every other NIC of
  its socket, SYS across; NIC1/NIC2 and NIC7/NIC8 (the two dual-port ConnectX-7 storage cards) PIX to each
  other and PXB to no GPU. DGX_H100_MATRIX below is that matrix's GPU x NIC part, row for row.
- The GPUs' buses (1b, 43, 52, 61, 9d, c3, d1, df; H200 SXM 10de:2335) from a DGX H200's `lspci -nn` in
  https://github.com/easydiffusion/torchruntime/issues/24; the H100 SXM id 10de:2330, the Broadcom PEX89000
  switch id 1000:c030, ConnectX-7 15b3:1021 and Gen5 x16 links from an HGX H100 NCCL topology dump in
  https://github.com/aliyun/SimAI/issues/128.

Ours, chosen to agree with those: each GPU three buses below its NIC behind a cascade (root port -> switch A,
whose downstream ports lead to the NIC and to switch B -> the GPU: PXB, as published; NIC at bus b, switch B's
ports at b+1 and b+2, GPU at b+3), one host bridge per pair (so pairs of one socket are NODE), the storage
cards at 0x29 and 0xaa (between the compute cards, as names in bus order require: mlx5_1/mlx5_2, mlx5_7/mlx5_8),
the four NVSwitches at 05-08 and the BMC: an ASPEED AST2600 (1a03:2000, class VGA) behind its own bridge at
bus 03, before every GPU, where a reader counting any VGA would make it GPU0.
"""

from __future__ import annotations

import os

from tests.pcie_trees import Tree

GEN5 = 32.0  # GT/s
SWITCH = ("0x060400", "0x1000", "0xc030")  # Broadcom PEX89000
GPU = ("0x030200", "0x10de", "0x2330")  # H100 SXM5 80GB, a 3D controller
CX7 = ("0x020700", "0x15b3", "0x1021")  # ConnectX-7, InfiniBand controller
ROOT_PORT = ("0x060400", "0x8086", "0x352a")  # Intel Sapphire Rapids PCIe root port
NVSWITCH = ("0x068000", "0x10de", "0x22a3")
BMC_BRIDGE = ("0x060400", "0x1a03", "0x1150")  # ASPEED AST1150 PCI-to-PCI bridge
BMC_VGA = ("0x030000", "0x1a03", "0x2000")  # ASPEED graphics family
CPUS = ("0-55,112-167", "56-111,168-223")

# (GPU bus, its NIC's bus, the NIC's name), GPU0-GPU7: the user guide's table.
PAIRS = (
    (0x1B, 0x18, "mlx5_0"),
    (0x43, 0x40, "mlx5_3"),
    (0x52, 0x4F, "mlx5_4"),
    (0x61, 0x5E, "mlx5_5"),
    (0x9D, 0x9A, "mlx5_6"),
    (0xC3, 0xC0, "mlx5_9"),
    (0xD1, 0xCE, "mlx5_10"),
    (0xDF, 0xDC, "mlx5_11"),
)
STORAGE = ((0x29, 0, ("mlx5_1", "mlx5_2")), (0xAA, 1, ("mlx5_7", "mlx5_8")))
DGX_H100_NICS = [f"mlx5_{n}" for n in range(12)]
DGX_H100_GPUS = [f"0000:{g:02x}:00.0" for g, _, _ in PAIRS]
# The published GPU x NIC matrix (NIC0-NIC11: mlx5_0-mlx5_11), rows GPU0-GPU7.
DGX_H100_MATRIX = [
    row.split()
    for row in (
        "PXB  NODE NODE NODE NODE NODE SYS  SYS  SYS  SYS  SYS  SYS",
        "NODE NODE NODE PXB  NODE NODE SYS  SYS  SYS  SYS  SYS  SYS",
        "NODE NODE NODE NODE PXB  NODE SYS  SYS  SYS  SYS  SYS  SYS",
        "NODE NODE NODE NODE NODE PXB  SYS  SYS  SYS  SYS  SYS  SYS",
        "SYS  SYS  SYS  SYS  SYS  SYS  PXB  NODE NODE NODE NODE NODE",
        "SYS  SYS  SYS  SYS  SYS  SYS  NODE NODE NODE PXB  NODE NODE",
        "SYS  SYS  SYS  SYS  SYS  SYS  NODE NODE NODE NODE PXB  NODE",
        "SYS  SYS  SYS  SYS  SYS  SYS  NODE NODE NODE NODE NODE PXB",
    )
]


def dgx_h100(root: str, **first_uplink) -> dict:
    """Write the DGX H100 tree under `root` (a sysfs root); every link Gen5 x16. `first_uplink` (speed=, width=)
    overrides GPU0's root port and the upstream port of switch A above it. Returns the function dirs by role."""
    t = Tree(root)
    gen5 = {"speed": GEN5, "max_speed": GEN5}
    pairs = []
    for i, (gpu_bus, nic_bus, name) in enumerate(PAIRS):
        numa, cpus = i // 4, CPUS[i // 4]
        top = nic_bus - 3  # the root port's bus, its host bridge's
        uplink = {**gen5, **(first_uplink if i == 0 else {})}
        rp = t.function(t.host_bridge(f"pci0000:{top:02x}"), f"0000:{top:02x}:01.0", ROOT_PORT, numa, **uplink)
        a = t.function(rp, f"0000:{top + 1:02x}:00.0", SWITCH, numa, **uplink)  # switch A's upstream port
        nic_port = t.function(a, f"0000:{top + 2:02x}:00.0", SWITCH, numa, **gen5)
        nic = t.function(nic_port, f"0000:{nic_bus:02x}:00.0", CX7, numa, cpus=cpus, **gen5)
        t.rdma(nic, name)
        cascade = t.function(a, f"0000:{top + 2:02x}:01.0", SWITCH, numa, **gen5)
        b = t.function(cascade, f"0000:{nic_bus + 1:02x}:00.0", SWITCH, numa, **gen5)  # switch B's upstream port
        gpu_port = t.function(b, f"0000:{nic_bus + 2:02x}:00.0", SWITCH, numa, **gen5)
        gpu = t.function(gpu_port, f"0000:{gpu_bus:02x}:00.0", GPU, numa, cpus=cpus, **gen5)
        pairs.append({"root_port": rp, "uplink": a, "nic": nic, "gpu": gpu})
    for bus, numa, names in STORAGE:
        rp = t.function(t.host_bridge(f"pci0000:{bus - 1:02x}"), f"0000:{bus - 1:02x}:01.0", ROOT_PORT, numa, **gen5)
        for fn, name in enumerate(names):
            t.rdma(t.function(rp, f"0000:{bus:02x}:00.{fn}", CX7, numa, cpus=CPUS[numa], **gen5), name)
    pch = t.host_bridge("pci0000:00")
    bmc_port = t.function(pch, "0000:00:1c.0", ROOT_PORT, 0, speed=5.0, max_speed=5.0, width=1)
    bmc_bridge = t.function(bmc_port, "0000:02:00.0", BMC_BRIDGE, 0, speed=5.0, width=1)
    bmc = t.function(bmc_bridge, "0000:03:00.0", BMC_VGA, 0, speed=None, max_speed=None, width=None, max_width=None)
    nvs_port = t.function(pch, "0000:00:01.0", ROOT_PORT, 0, **gen5)
    for bus in range(0x05, 0x09):
        t.function(nvs_port, f"0000:{bus:02x}:00.0", NVSWITCH, 0, **gen5)
    return {"pairs": pairs, "bmc": os.path.basename(bmc)}
