"""The PCIe hierarchy of each simulated host: host bridges, root ports, PCIe switches and
GPUs above and beside its HCAs, laid out as the kernel shows them (a function's directory nested in
its bridge's under devices/pci0000:NN/, bus/pci/devices/<address> linking to each), so that
collectors.pcipath reads each HCA's path up to its root port. Pure: layout.build plans a node's
tree once, rendering.TreeOutput writes it.

Node shapes (layout faults, given when the fabric is created):
- default: each HCA on a PCIe switch of its own (root port -> switch upstream port -> downstream
  port -> HCA), the switch of the card's generation, its uplink x16: every link at its full speed
  and width, no hop narrower than the card's own link;
- `dgx`: 8 GPUs and 8 HCAs behind 4 switches (2 GPUs + 2 HCAs each), one switch per host bridge,
  two host bridges per socket, two sockets, every link Gen4 x16 (as a DGX A100);
- `misbuilt`: the first HCA below the switch of two GPUs, the three behind one uplink wired x4 (a switch
  built for slower cards) at the card's generation, Gen4 at most: narrower than any simulated port, so
  the GPUs share a hop that cannot carry the card (GPUs below an uplink that carries the card's
  port are no finding, their traffic to the card turns inside the switch).

A link has two ends and sysfs shows it at both: the root port and the switch upstream port below it
both show the uplink (`uplink=`), a downstream port shows the link of the function below it (so a
card's `pcie=` shows there too).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import pcie_speed_text

GEN4 = 16.0
ROOT_PORT = ("0x060400", "0x8086", "0x2030")  # Intel Xeon Scalable PCIe root port
DGX_ROOT_PORT = ("0x060400", "0x1022", "0x1483")  # AMD Rome GPP bridge, as in a DGX A100
SWITCH = ("0x060400", "0x1000", "0xc010")  # Broadcom PEX88096 ports
GPU = ("0x030200", "0x10de", "0x20b0")  # A100 SXM4 40GB: a 3D controller
GPU_LINK = (GEN4, 16)
MISBUILT_WIDTH = 4  # lanes of the misbuilt switch's uplink: Gen4 x4 ~63 Gb/s, Gen3 x4 ~32 Gb/s
HCA_CLASS = {"InfiniBand": "0x020700", "Ethernet": "0x020000"}
# PCI buses of the HCA slots of a default node, in order; NUMA node alternates with the slot. Each
# sits 3 buses below its host bridge's (root port, switch upstream port, downstream port).
BUSES = (0x3B, 0x86, 0xAF, 0xD8, 0x17, 0x5E, 0x1B, 0x37)
CPUS = ("0-15,32-47", "16-31,48-63")  # two 16-core sockets, hyper-threaded
DGX_CPUS = ("0-63,128-191", "64-127,192-255")  # two 64-core sockets
DGX_BRIDGES = (0x10, 0x30, 0x90, 0xB0)  # root buses of the 4 switches: two on each socket
DGX_HCAS = 8
SHAPES = ("dgx", "misbuilt")


@dataclass(frozen=True, slots=True)
class PciFn:
    """A bridge or GPU: where it sits, what it is, its link at full speed and width."""

    rel: str  # its directory, relative to the node's root
    address: str
    ident: tuple[str, str, str]  # class, vendor, device
    numa: int
    cpus: str  # "": no local_cpulist
    gts: float | None  # None: no max_link_speed (a function without a PCIe link of its own, as a BMC's VGA)
    width: int | None  # None: no max_link_width
    slot: int | None = None  # a downstream port above an HCA: that HCA's index (the link is the card's)
    switch: int | None = None  # a root port or switch upstream port: the switch whose uplink it shows


@dataclass(frozen=True, slots=True)
class Slot:
    """Where one HCA sits: its parent's directory and address, and the switch uplink above it."""

    parent: str
    address: str
    numa: int
    cpus: str
    switch: int
    uplink: tuple[float, int]  # the uplink's full speed and width


@dataclass(frozen=True, slots=True)
class NodePci:
    functions: tuple[PciFn, ...]  # bridges and GPUs, each after its parent
    slots: tuple[Slot, ...]  # one per HCA, in order


class _Builder:
    def __init__(self, gts: float, width: int) -> None:
        self.card = (gts, width)  # the HCAs' own full link
        self.functions: list[PciFn] = []
        self.slots: list[Slot] = []
        self.switches = 0

    def fn(self, parent: str, address: str, ident: tuple, numa: int, cpus: str, link: tuple, **role) -> str:
        rel = f"{parent}/{address}"
        self.functions.append(PciFn(rel, address, ident, numa, cpus, link[0], link[1], **role))
        return rel

    def switch(
        self, root_bus: int, rp_devfn: str, rp_ident: tuple, numa: int, cpus: str, gts: float, width: int = 16
    ) -> str:
        """Host bridge pci0000:<root_bus> -> root port -> switch upstream port: the latter's directory."""
        s, up = self.switches, (gts, width)
        self.switches += 1
        host = f"devices/pci0000:{root_bus:02x}"
        rp = self.fn(host, f"0000:{root_bus:02x}:{rp_devfn}", rp_ident, numa, cpus, up, switch=s)
        return self.fn(rp, f"0000:{root_bus + 1:02x}:00.0", SWITCH, numa, cpus, up, switch=s)

    def hca(self, usp: str, port: str, bus: int, numa: int, cpus: str, gts: float, width: int = 16) -> None:
        dsp = self.fn(usp, port, SWITCH, numa, cpus, self.card, slot=len(self.slots))
        self.slots.append(Slot(dsp, f"0000:{bus:02x}:00.0", numa, cpus, self.switches - 1, (gts, width)))

    def gpu(self, usp: str, port: str, bus: int, numa: int, cpus: str) -> None:
        dsp = self.fn(usp, port, SWITCH, numa, cpus, GPU_LINK)
        self.fn(dsp, f"0000:{bus:02x}:00.0", GPU, numa, cpus, GPU_LINK)


def plan(shape: str, hcas: int, gts: float, width: int) -> NodePci:
    """The node's PCIe tree: `hcas` HCAs whose own full link is (gts, width), in the `shape` ("" default)."""
    b = _Builder(gts, width)
    if shape == "dgx":
        up = max(GEN4, gts)
        for s, root in enumerate(DGX_BRIDGES):
            numa = s // 2
            cpus = DGX_CPUS[numa]
            usp = b.switch(root, "01.1", DGX_ROOT_PORT, numa, cpus, up)
            below = root + 2  # the bus of the downstream ports; each has a bus of its own below it
            for i, add in enumerate((b.gpu, b.hca, b.gpu, b.hca)):
                port = f"0000:{below:02x}:{i:02x}.0"
                if add == b.gpu:
                    b.gpu(usp, port, below + 1 + i, numa, cpus)
                else:
                    b.hca(usp, port, below + 1 + i, numa, cpus, up)
        return NodePci(tuple(b.functions), tuple(b.slots))
    for h in range(hcas):
        bus = BUSES[h]
        numa = h % 2 if hcas > 1 else 0
        cpus, root = CPUS[numa], bus - 3
        if shape == "misbuilt" and h == 0:
            up = min(GEN4, gts)
            usp = b.switch(root, "00.0", ROOT_PORT, numa, cpus, up, MISBUILT_WIDTH)
            b.hca(usp, f"0000:{root + 2:02x}:00.0", bus, numa, cpus, up, MISBUILT_WIDTH)
            for i in (1, 2):
                b.gpu(usp, f"0000:{root + 2:02x}:{i:02x}.0", bus + i, numa, cpus)
            continue
        usp = b.switch(root, "00.0", ROOT_PORT, numa, cpus, gts)
        b.hca(usp, f"0000:{root + 2:02x}:00.0", bus, numa, cpus, gts)
    return NodePci(tuple(b.functions), tuple(b.slots))


def fn_files(fn: PciFn, current: tuple[float | None, int | None]) -> dict[str, str]:
    """Every file of a bridge's or GPU's directory; `current` is the (speed, width) its link trained at. What is
    None or "" has no file, as the kernel shows no link for a function that has none."""
    klass, vendor, device = fn.ident
    files = {"class": klass + "\n", "vendor": vendor + "\n", "device": device + "\n", "numa_node": f"{fn.numa}\n"}
    if fn.cpus:
        files["local_cpulist"] = fn.cpus + "\n"
    for name, gts in (("current_link_speed", current[0]), ("max_link_speed", fn.gts)):
        if gts is not None:
            files[name] = pcie_speed_text(gts) + "\n"
    for name, width in (("current_link_width", current[1]), ("max_link_width", fn.width)):
        if width is not None:
            files[name] = f"{width}\n"
    return files


def trained(node: NodePci, wanted: list[tuple[float | None, int | None]]) -> dict[int, tuple[float, int]]:
    """Each switch's uplink as it trained: the lowest that an `uplink=` on a card below it asks for
    (`wanted`, by HCA index; None: not set), at most its full speed and width."""
    out: dict[int, tuple[float, int]] = {}
    for slot, (gts, width) in zip(node.slots, wanted, strict=True):
        have = out.get(slot.switch, slot.uplink)
        out[slot.switch] = (min(gts or have[0], have[0]), min(width or have[1], have[1]))
    return out


def bus_link(fn_rel: str) -> str:
    """What bus/pci/devices/<address> links to, relative to that directory."""
    return "../../../" + fn_rel
