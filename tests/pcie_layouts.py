"""Small PCIe layouts the health rules judge, written as sysfs trees with tests/pcie_trees.py's Tree,
and read back as the node agent's snapshot (the `pcie_path` and `gpus` ingest stores).

- `misbuilt`: one IB card and two GPUs behind one Gen4 x16 PCIe switch uplink.
- `hgx`: an 8-GPU HGX server: 4 PCIe switches, each with two GPUs and one 400 Gb/s card
  below a Gen5 x16 uplink, two switches on each socket.
- `sockets`: a two-socket host, each IB card and GPU on a root port of its own; NUMA nodes as given (-1: the
  kernel's "none").
"""

from __future__ import annotations

from collectors import read_host, to_dict
from tests.pcie_trees import GEN4, GPU, HCA, ROOT_PORT, SWITCH, Tree

GEN5 = 32.0  # GT/s

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


def hgx(root: str, **first_uplink) -> dict:
    """Switch s (0-3) on host bridge pci0000:{s*0x20+0x10}: root port .01.0 -> switch upstream port (the uplink) ->
    downstream ports 00.0 (GPU), 01.0 (GPU), 02.0 (mlx5_s); every link Gen5 x16, the first uplink as
    `first_uplink` says (speed=, width=). Returns each switch's uplink address, GPUs and card, switch 0 first."""
    t = Tree(root)
    gen5 = {"speed": GEN5, "max_speed": GEN5}
    switches = []
    for s in range(4):
        numa, top = s // 2, 0x10 + 0x20 * s
        uplink = {**gen5, **(first_uplink if s == 0 else {})}
        rp = t.function(t.host_bridge(f"pci0000:{top:02x}"), f"0000:{top:02x}:01.0", ROOT_PORT, numa, **uplink)
        usp = t.function(rp, f"0000:{top + 1:02x}:00.0", SWITCH, numa, **uplink)
        gpus = []
        for port in (0, 1):
            dsp = t.function(usp, f"0000:{top + 2:02x}:{port:02x}.0", SWITCH, numa, **gen5)
            gpus.append(f"0000:{top + 3 + port:02x}:00.0")
            t.function(dsp, gpus[-1], GPU, numa, cpus=CPUS[numa], **gen5)
        dsp = t.function(usp, f"0000:{top + 2:02x}:02.0", SWITCH, numa, **gen5)
        t.rdma(t.function(dsp, f"0000:{top + 5:02x}:00.0", HCA, numa, cpus=CPUS[numa], **gen5), f"mlx5_{s}")
        switches.append({"uplink": f"0000:{top + 1:02x}:00.0", "gpus": gpus, "card": f"mlx5_{s}"})
    return {"switches": switches}
