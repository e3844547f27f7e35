"""GPU x RDMA device relations in `nvidia-smi topo -m` words.

nvidia-smi's legend, which this implements:
  PIX  = Connection traversing at most a single PCIe bridge
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
NVML's levels say the same (NVML_TOPOLOGY_SINGLE "a single PCIe switch", _MULTIPLE "need not
traverse a host bridge", _HOSTBRIDGE, _NODE, _SYSTEM). nvidia-smi counts a PCIe switch (its
upstream port and the downstream ports below it, three bridges in sysfs) as the single bridge
of PIX, as NCCL does when it folds a downstream port into its switch: two functions are PIX
when at most one bridge separates each from the deepest bridge above both.
"""

from __future__ import annotations

from .pcimodel import Gpu

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")  # nearest first


def relation(tree, a: str, b: str) -> str:
    """How the functions `a` and `b` of a PciTree reach each other, in nvidia-smi topo -m words."""
    key = (a, b) if a <= b else (b, a)
    cached = tree.relations.get(key)
    if cached is None:
        cached = tree.relations[key] = _relation(tree, a, b)
    return cached


def _relation(tree, a: str, b: str) -> str:
    ca, cb = tree.chain(a), tree.chain(b)
    common = 0
    while common < min(len(ca), len(cb)) and ca[common] == cb[common]:
        common += 1
    if common:
        # Below the same root port: never through the host bridge.
        return "PIX" if len(ca) - common <= 1 and len(cb) - common <= 1 else "PXB"
    ha, hb = tree.host_bridge(a), tree.host_bridge(b)
    if ha is not None and ha == hb:
        return "PHB"
    na, nb = tree.functions[a].get("numa_node"), tree.functions[b].get("numa_node")
    if na is not None and na == nb:
        return "NODE"
    # Other NUMA nodes, or a NUMA node unknown (-1): nvidia-smi too says SYS when it cannot tell.
    return "SYS"


def matrix(gpus: list[Gpu]) -> tuple[list[str], list[list[str]]]:
    """(RDMA device names, one row of relations per GPU in bus order), as nvidia-smi topo -m prints them."""
    names: list[str] = []
    for g in gpus:
        names.extend(n for n in g.nics if n not in names)
    return names, [[g.nics.get(n, "-") for n in names] for g in gpus]


def nearest(gpu: Gpu) -> tuple[str | None, str | None]:
    """The RDMA device nearest to a GPU and how it is reached (the first by name among equals)."""
    best = min(gpu.nics.items(), key=lambda kv: RELATIONS.index(kv[1]), default=(None, None))
    return best[0], best[1]
