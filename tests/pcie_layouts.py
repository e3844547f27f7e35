"""Small PCIe layouts the health rules judge (issue 26), written as sysfs trees with tests/pcie_trees.py's Tree,
and read back as the node agent's snapshot (the `pcie_path` and `gpus` ingest stores).

- `misbuilt`: one IB card and two GPUs behind one Gen4 x16 PCIe switch uplink.
- `sockets`: a two-socket host, each IB card and GPU on a root port of its own; NUMA nodes as given (-1: the
  kernel's "none").
"""

from __future__ import annotations

from collectors import read_host, to_dict
from tests.pcie_trees import GEN4, GPU, HCA, ROOT_PORT, SWITCH, Tree

GEN5 = "32.0 GT/s PCIe"

CPUS = {0: "0-31,64-95", 1: "32-63,96-127", -1: "0-127"}


def snapshot(root: str, host: str = "cn017", now: float | None = None) -> dict:
    return to_dict(read_host(root, host=host, use_verbs=False, now=now))


def misbuilt(root: str, gpus: int = 2, gen: str = GEN4, **uplink) -> dict:
    """Root port 0000:40:01.1 -> switch 0000:41:00.0 (the uplink) -> downstream ports 0000:42:00.0 (mlx5_0 at
    0000:43:00.0), 0000:42:04.0 (GPU 0000:44:00.0), 0000:42:08.0 (GPU 0000:45:00.0). Every link x16 at `gen`
    (GT/s as sysfs writes it), the uplink as `uplink` says (speed=, width=); `gpus` of the two GPUs."""
    t = Tree(root)
    full = {"speed": gen, "max_speed": gen}
    rp = t.function(t.host_bridge("pci0000:40"), "0000:40:01.1", ROOT_PORT, 0, **{**full, **uplink})
    usp = t.function(rp, "0000:41:00.0", SWITCH, 0, **{**full, **uplink})
    nic_port = t.function(usp, "0000:42:00.0", SWITCH, 0, **full)
    t.rdma(t.function(nic_port, "0000:43:00.0", HCA, 0, cpus=CPUS[0], **full), "mlx5_0")
    for devfn, bus in ((0x04, 0x44), (0x08, 0x45))[:gpus]:
        port = t.function(usp, f"0000:42:{devfn:02x}.0", SWITCH, 0, **full)
        t.function(port, f"0000:{bus:02x}:00.0", GPU, 0, cpus=CPUS[0], **full)
    return {"uplink": "0000:41:00.0", "gpus": ["0000:44:00.0", "0000:45:00.0"][:gpus]}


def sockets(root: str, cards: dict[str, int], gpus: dict[str, int], cpus: dict[int, str] = CPUS) -> None:
    """IB cards by name and GPUs by address, each on a root port of its own on its NUMA node's host bridge
    (socket 0: pci0000:00, socket 1: pci0000:80; -1 goes on socket 0 without a NUMA node). `cpus`: each NUMA
    node's local_cpulist (a single-socket host lists the same CPUs for all)."""
    t = Tree(root)
    slot = 1
    for name, numa in cards.items():
        bus = 0x80 if numa == 1 else 0x00
        rp = t.function(t.host_bridge(f"pci0000:{bus:02x}"), f"0000:{bus:02x}:{slot:02x}.1", ROOT_PORT, numa)
        t.rdma(t.function(rp, f"0000:{bus + slot:02x}:00.0", HCA, numa, cpus=cpus[numa]), name)
        slot += 1
    for address, numa in gpus.items():
        hb = 0x80 if numa == 1 else 0x00
        rp = t.function(t.host_bridge(f"pci0000:{hb:02x}"), f"0000:{hb:02x}:{slot:02x}.1", ROOT_PORT, numa)
        t.function(rp, address, GPU, numa, cpus=cpus[numa])
        slot += 1
