"""Typed values of the PCIe path from an RDMA device up to its CPU. Missing means None.

A Hop is one PCI function on the path: the device's own function first, then each bridge or
switch port above it, the root port last. Each field names the sysfs file it comes from,
relative to that function's directory under /sys/devices/pci*/.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import src

# PCI base class << 8 | subclass, the upper 16 bits of `class` (0x030200 -> 0x0302).
DISPLAY_VGA = 0x0300
DISPLAY_3D = 0x0302
DISPLAY_OTHER = 0x0380  # AMD's Instinct accelerators present themselves so
BRIDGE_PCI = 0x0604
# A GPU is a display-class function of a GPU maker: vendor ids from the PCI ID repository (pci-ids.ucw.cz:
# 10de NVIDIA Corporation, 1002 Advanced Micro Devices [AMD/ATI]). Almost every server's management
# controller has a VGA function too (ASPEED 1a03, Matrox 102b...): not a GPU, so not GPU0 of the matrix,
# whose numbering then follows nvidia-smi's (PCI bus order, docs/pcie.md).
GPU_VENDORS = {0x10DE: "NVIDIA", 0x1002: "AMD"}
GPU_CLASSES = (DISPLAY_VGA, DISPLAY_3D, DISPLAY_OTHER)


def is_gpu(class_code: int | None, vendor: int | None) -> bool:
    """Whether a PCI function of `class_code` (class >> 8) and `vendor` is a GPU (GPU_VENDORS, GPU_CLASSES)."""
    return class_code in GPU_CLASSES and vendor in GPU_VENDORS


@dataclass(frozen=True, slots=True)
class PciFunction:
    """What a PCI function says of itself and its link: a hop of a path, or a GPU."""

    address: str = field(metadata=src("the function's directory name, 0000:40:01.1"))
    class_code: int | None = field(default=None, metadata=src("class"))
    vendor: int | None = field(default=None, metadata=src("vendor"))
    device: int | None = field(default=None, metadata=src("device"))
    current_gts: float | None = field(default=None, metadata=src("current_link_speed (read every poll)"))
    current_width: int | None = field(default=None, metadata=src("current_link_width (read every poll)"))
    max_gts: float | None = field(default=None, metadata=src("max_link_speed"))
    max_width: int | None = field(default=None, metadata=src("max_link_width"))
    numa_node: int | None = field(default=None, metadata=src("numa_node (-1: None)"))
    local_cpulist: str | None = field(default=None, metadata=src("local_cpulist"))


@dataclass(frozen=True, slots=True)
class Hop(PciFunction):
    # "function" (the device's own), "switch port" (a bridge below the root port), "root port".
    kind: str = field(default="", metadata=src("its place on the path"))


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A GPU or another RDMA device (not an SR-IOV virtual function: it rides its physical function's
    link) below a bridge of the path: it shares the hops from `via` up."""

    address: str = field(metadata=src("the function's directory name"))
    kind: str = field(metadata=src("'gpu' (class and vendor: pcimodel.is_gpu) or 'rdma' (class/infiniband)"))
    name: str | None = field(default=None, metadata=src("the RDMA device's name (class/infiniband/<name>)"))
    # Its own link is in its device's `pci` or in the host's GPUs: one value, one place.
    via: str = field(default="", metadata=src("the deepest hop of the path above both"))


@dataclass(frozen=True, slots=True)
class PciePath:
    hops: tuple[Hop, ...] = field(metadata=src("device -> ../../0000:41:00.0, then each parent directory"))
    host_bridge: str | None = field(default=None, metadata=src("the directory above the root port, pci0000:40"))
    neighbours: tuple[Neighbour, ...] = field(default=(), metadata=src("/sys/bus/pci/devices/* below the path"))


@dataclass(frozen=True, slots=True)
class Gpu(PciFunction):
    """A display or 3D controller of any vendor, found by its class, not by a vendor list."""

    # GPU x RDMA device in nvidia-smi topo -m words (PIX, PXB, PHB, NODE, SYS), by device name.
    nics: dict[str, str] = field(default_factory=dict, metadata=src("derived: pcitopo.relation"))
