"""PCIe hierarchies laid out as on real machines, written as sysfs trees (issue 26).

`dgx_a100(root)` rebuilds a DGX A100 (8 A100 SXM4, 8 ConnectX-6 compute HCAs behind Broadcom
PEX88096 PCIe switches, 2 dual-port ConnectX-6 storage cards on root ports) from what its
owners published, the facts carried over, none of the text:

- https://github.com/NVIDIA/nccl/issues/1505 ("Question on DGX A100 GPU topologies", a DGX A100
  40GB): its `nvidia-smi topo -m` (GPU0/GPU1 PXB to NIC0/NIC1, GPU2/GPU3 PXB to NIC2/NIC3,
  GPU4 PXB to NIC6/NIC7, everything else SYS; NUMA affinity 3, 3, 1, 1, 7 for GPU0-GPU4) and its
  NCCL topology dump, the PCIe tree: the first quadrant's switches (upstream ports 01:00.0 ->
  03:00.0 -> 05:00.0 -> GPU 07:00.0, class 0x030200, 10de:20b0; 01:00.0 -> 0a:00.0 -> mlx5_0 at
  0c:00.0, class 0x020700, 15b3:101b; 0a:00.0 -> 0d:00.0), switch ids 1000:c010, every link
  16.0 GT/s x16, the storage card 61:00.0 (mlx5_4, mlx5_5) on a root port of NUMA node 0, a
  switch 81:00.0 on NUMA node 7, NVSwitches at c4:00.0-c9:00.0 (class 0x068000).
- https://github.com/rapidsai/ucx-py/issues/749 (another DGX A100): the same matrix whole,
  GPU6/GPU7 PXB to mlx5_8/mlx5_9, the four storage functions SYS to every GPU.

NCCL's dump folds each switch downstream port into its switch, so the downstream ports here
are ours (devfn 00.0 and 04.0 of the bus below each upstream port), and so are the tree below
0d:00.0 and the bus numbers of the other three quadrants, laid out as the first (which the
issue shows) at 0x40, 0x80 and 0xb0. NUMA node 5 for GPU6/GPU7 and 4 for the second storage
card are ours too (NPS4 numbering; the excerpts we could read stop before them); the matrix
only needs each quadrant on a NUMA node of its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

GEN4 = "16.0 GT/s PCIe"
SWITCH = ("0x060400", "0x1000", "0xc010")  # Broadcom PEX88096
GPU = ("0x030200", "0x10de", "0x20b0")  # A100 SXM4 40GB, a 3D controller
HCA = ("0x020700", "0x15b3", "0x101b")  # ConnectX-6, InfiniBand controller
NVSWITCH = ("0x068000", "0x10de", "0x1af1")  # a bridge of class "other": neither a GPU nor a path
ROOT_PORT = ("0x060400", "0x1022", "0x1483")  # AMD Rome GPP bridge

# The published GPU x NIC matrix (NIC0-NIC11 are mlx5_0-mlx5_11), rows GPU0-GPU7.
_PAIRS = {0: (0, 1), 1: (0, 1), 2: (2, 3), 3: (2, 3), 4: (6, 7), 5: (6, 7), 6: (8, 9), 7: (8, 9)}
DGX_A100_MATRIX = [["PXB" if n in _PAIRS[g] else "SYS" for n in range(12)] for g in range(8)]
DGX_A100_NICS = [f"mlx5_{n}" for n in range(12)]


@dataclass
class Tree:
    """Writes functions the way the kernel lays them out: nested directories, bus links, class links."""

    root: str

    def function(self, parent_dir: str, address: str, ident: tuple[str, str, str], numa: int, **link) -> str:
        d = os.path.join(parent_dir, address)
        os.makedirs(d, exist_ok=True)
        klass, vendor, device = ident
        files = {
            "class": klass,
            "vendor": vendor,
            "device": device,
            "numa_node": str(numa),
            "local_cpulist": link.pop("cpus", ""),
            "current_link_speed": link.pop("speed", GEN4),
            "max_link_speed": link.pop("max_speed", GEN4),
            "current_link_width": str(link.pop("width", 16)),
            "max_link_width": str(link.pop("max_width", 16)),
        }
        for name, text in files.items():
            if text:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text + "\n")
        bus = os.path.join(self.root, "bus", "pci", "devices")
        os.makedirs(bus, exist_ok=True)
        os.symlink(os.path.relpath(d, bus), os.path.join(bus, address))
        return d

    def rdma(self, function_dir: str, name: str) -> None:
        """class/infiniband/<name> -> the function's infiniband/<name>, as the kernel links it."""
        dev = os.path.join(function_dir, "infiniband", name)
        os.makedirs(os.path.join(dev, "ports", "1"), exist_ok=True)
        for fname, text in (("node_type", "1: CA"), ("hca_type", "MT4123"), ("fw_ver", "20.31.1014")):
            with open(os.path.join(dev, fname), "w") as f:
                f.write(text + "\n")
        for fname, text in (("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"), ("rate", "200 Gb/sec (4X HDR)")):
            with open(os.path.join(dev, "ports", "1", fname), "w") as f:
                f.write(text + "\n")
        os.symlink(f"../../../{os.path.basename(function_dir)}", os.path.join(dev, "device"))  # the kernel's form
        cls = os.path.join(self.root, "class", "infiniband")
        os.makedirs(cls, exist_ok=True)
        os.symlink(os.path.relpath(dev, cls), os.path.join(cls, name))

    def host_bridge(self, name: str) -> str:
        d = os.path.join(self.root, "devices", name)
        os.makedirs(d, exist_ok=True)
        return d

    def switch(self, parent_dir: str, bus: int, numa: int, dsp: int = 0) -> str:
        """An upstream port on `bus` and its downstream port devfn `dsp` on the bus below: the latter's dir."""
        usp = self.function(parent_dir, f"0000:{bus:02x}:00.0", SWITCH, numa)
        return self.function(usp, f"0000:{bus + 1:02x}:{dsp:02x}.0", SWITCH, numa)


def _quadrant(t: Tree, base: int, host: str, numa: int, nics: tuple[str, str], cpus: str, **uplink) -> dict:
    """One PEX88096 quadrant laid out as the published first one; returns the function dirs by role."""
    rp_bus = int(host[-2:], 16)  # the root port sits on its host bridge's bus
    rp = t.function(t.host_bridge(host), f"0000:{rp_bus:02x}:01.1", ROOT_PORT, numa, **uplink)
    top = os.path.join(rp, f"0000:{base + 1:02x}:00.0")
    t.function(rp, f"0000:{base + 1:02x}:00.0", SWITCH, numa, **uplink)
    a = t.function(top, f"0000:{base + 2:02x}:00.0", SWITCH, numa)  # -> 03 -> 05 -> GPU 07
    a = t.switch(a, base + 3, numa)
    a = t.switch(a, base + 5, numa)
    gpu0 = t.function(a, f"0000:{base + 7:02x}:00.0", GPU, numa, cpus=cpus)
    b = t.function(top, f"0000:{base + 2:02x}:04.0", SWITCH, numa)  # -> 0a -> NIC 0c, -> 0d
    b_up = t.function(b, f"0000:{base + 0xA:02x}:00.0", SWITCH, numa)
    nic_port = t.function(b_up, f"0000:{base + 0xB:02x}:00.0", SWITCH, numa)
    nic0 = t.function(nic_port, f"0000:{base + 0xC:02x}:00.0", HCA, numa, cpus=cpus)
    c = t.function(b_up, f"0000:{base + 0xB:02x}:04.0", SWITCH, numa)  # -> 0d -> GPU 0f, -> 10 -> NIC 12
    c_up = t.function(c, f"0000:{base + 0xD:02x}:00.0", SWITCH, numa)
    gpu_port = t.function(c_up, f"0000:{base + 0xE:02x}:00.0", SWITCH, numa)
    gpu1 = t.function(gpu_port, f"0000:{base + 0xF:02x}:00.0", GPU, numa, cpus=cpus)
    d = t.function(c_up, f"0000:{base + 0xE:02x}:04.0", SWITCH, numa)
    d = t.switch(d, base + 0x10, numa)
    nic1 = t.function(d, f"0000:{base + 0x12:02x}:00.0", HCA, numa, cpus=cpus)
    t.rdma(nic0, nics[0])
    t.rdma(nic1, nics[1])
    return {"root_port": rp, "uplink": top, "gpus": (gpu0, gpu1), "nics": (nic0, nic1)}


def _storage(t: Tree, base: int, host: str, numa: int, names: tuple[str, str]) -> None:
    rp = t.function(t.host_bridge(host), f"0000:{base:02x}:03.1", ROOT_PORT, numa)
    for fn, name in zip((0, 1), names, strict=True):
        t.rdma(t.function(rp, f"0000:{base + 1:02x}:00.{fn}", HCA, numa), name)


def dgx_a100(root: str, **first_uplink) -> dict:
    """Write the DGX A100 tree under `root` (a sysfs root); `first_uplink` overrides the first quadrant's
    root port and top switch link (speed=, width=), for a misbuilt or retrained machine."""
    t = Tree(root)
    quads = [
        _quadrant(t, 0x00, "pci0000:00", 3, ("mlx5_0", "mlx5_1"), "48-63,176-191", **first_uplink),
        _quadrant(t, 0x40, "pci0000:40", 1, ("mlx5_2", "mlx5_3"), "16-31,144-159"),
        _quadrant(t, 0x80, "pci0000:80", 7, ("mlx5_6", "mlx5_7"), "112-127,240-255"),
        _quadrant(t, 0xB0, "pci0000:a0", 5, ("mlx5_8", "mlx5_9"), "80-95,208-223"),
    ]
    _storage(t, 0x60, "pci0000:60", 0, ("mlx5_4", "mlx5_5"))
    _storage(t, 0xE0, "pci0000:e0", 4, ("mlx5_10", "mlx5_11"))
    rp = t.function(t.host_bridge("pci0000:c0"), "0000:c0:01.1", ROOT_PORT, 6)
    for bus in range(0xC4, 0xCA):
        t.function(rp, f"0000:{bus:02x}:00.0", NVSWITCH, 6)
    return {"quadrants": quads}
