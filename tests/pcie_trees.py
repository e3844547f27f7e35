"""PCIe hierarchies laid out as on real machines, written as sysfs trees.

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

The files are the simulator's: `Tree` places each function and hands it to collectors/sim/tree.py's
write_function, which writes what collectors/sim/pcitree.py says a bridge's or GPU's directory holds, as it
does for every simulated node. Only the layouts of published machines, and the RDMA device stubs below their
cards, are the tests' own.
"""

from __future__ import annotations

import os

from collectors.sim.pcitree import DGX_ROOT_PORT as ROOT_PORT  # AMD Rome GPP bridge
from collectors.sim.pcitree import GEN4, GPU, SWITCH, PciFn  # GT/s; A100 SXM4 40GB; Broadcom PEX88096
from collectors.sim.tree import TreeWriter, write_function

HCA = ("0x020700", "0x15b3", "0x101b")  # ConnectX-6, InfiniBand controller
NVSWITCH = ("0x068000", "0x10de", "0x1af1")  # a bridge of class "other": neither a GPU nor a path
# What the reader needs of an RDMA device below a card: an active 200 Gb/s ConnectX-6 port.
RDMA_FILES = {
    "node_type": "1: CA",
    "hca_type": "MT4123",
    "fw_ver": "20.31.1014",
    "ports/1/state": "4: ACTIVE",
    "ports/1/phys_state": "5: LinkUp",
    "ports/1/rate": "200 Gb/sec (4X HDR)",
}

# The published GPU x NIC matrix (NIC0-NIC11 are mlx5_0-mlx5_11), rows GPU0-GPU7.
_PAIRS = {0: (0, 1), 1: (0, 1), 2: (2, 3), 3: (2, 3), 4: (6, 7), 5: (6, 7), 6: (8, 9), 7: (8, 9)}
DGX_A100_MATRIX = [["PXB" if n in _PAIRS[g] else "SYS" for n in range(12)] for g in range(8)]
DGX_A100_NICS = [f"mlx5_{n}" for n in range(12)]


class Tree:
    """A node's sysfs root, written once, a function at a time, by the simulator's writer (see the module's
    docstring). Speeds are GT/s (collectors/sim/pcitree.GEN4), widths lanes; None leaves that file out."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.writer = TreeWriter(os.path.dirname(root))  # its scratch directory beside the root, not in it

    def function(
        self,
        parent_dir: str,
        address: str,
        ident: tuple[str, str, str],
        numa: int,
        cpus: str = "",
        speed: float | None = GEN4,
        max_speed: float | None = GEN4,
        width: int | None = 16,
        max_width: int | None = 16,
    ) -> str:
        """The function `address` below `parent_dir` (a host bridge's or another function's directory): its dir."""
        rel = os.path.relpath(os.path.join(parent_dir, address), self.root)
        fn = PciFn(rel, address, ident, numa, cpus, max_speed, max_width)
        return write_function(self.writer, self.root, fn, (speed, width))

    def rdma(self, function_dir: str, name: str) -> None:
        """An RDMA device stub below a card's function (RDMA_FILES), and class/infiniband/<name> linking to it as
        the kernel links it."""
        w, dev = self.writer, os.path.join(function_dir, "infiniband", name)
        w.dir(os.path.join(dev, "ports", "1"))
        for rel, text in RDMA_FILES.items():
            w.file(os.path.join(dev, rel), text + "\n")
        w.link(os.path.join(dev, "device"), f"../../../{os.path.basename(function_dir)}")  # the kernel's form
        cls = os.path.join(self.root, "class", "infiniband")
        w.dir(cls)
        w.link(os.path.join(cls, name), os.path.relpath(dev, cls))

    def host_bridge(self, name: str) -> str:
        d = os.path.join(self.root, "devices", name)
        self.writer.dir(d)
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
