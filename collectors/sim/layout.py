"""The simulated fabric's hardware: which node has which HCAs, ports, GUIDs, LIDs, netdevs.

Everything is a pure function of (seed, nodes, ports, hcas, shapes), so a fabric never has
to store its layout: the state file stores those and the layout is rebuilt. `shapes` are the
layout faults given at start (node -> "dgx" or "misbuilt", see pcitree).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from . import pcitree
from .hardware import MODELS, HcaModel

# GUID prefix (Mellanox OUI + 0x0300, as GUIDs derived from a MAC carry it).
_OUI = {"mlx5": 0x0C42A1, "mlx4": 0x0002C9}
# Each HCA takes a block of GUIDs: its port GUIDs are its node GUID + port number (as
# ibsim makes them), so a step of 1 would give one HCA's port the next HCA's GUID.
GUID_BLOCK = 8
_FIRST_LID = 0x10
SM_LID = 0x1


class LayoutError(ValueError):
    """Options that cannot describe a fabric, or a name that is not in it."""


def unit(seed: int, *parts: object) -> float:
    """A deterministic float in [0, 1) for (seed, parts): stateless, so steps can be replayed."""
    text = "|".join(map(str, (seed, *parts))).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2**64


def node_name(index: int) -> str:
    return f"cn{index + 1:03d}"


@dataclass(frozen=True, slots=True)
class SimPort:
    key: str  # "cn001/mlx5_0/1"
    number: int
    netdev: str
    lid: int  # 0 on RoCE ports


class PciPlaced:
    """Where an RDMA device (an HCA, or one of its SR-IOV functions) sits under the simulated sysfs root."""

    __slots__ = ()
    name: str
    pci_addr: str
    pci_dir: str  # its parent's directory: the downstream port above it

    @property
    def pci_rel(self) -> str:
        return f"{self.pci_dir}/{self.pci_addr}"

    @property
    def dev_rel(self) -> str:
        return f"{self.pci_rel}/infiniband/{self.name}"


@dataclass(frozen=True, slots=True)
class SimDevice(PciPlaced):
    key: str  # "cn001/mlx5_0"
    name: str
    model: HcaModel
    speed: str  # native speed of its ports
    pci_addr: str  # "0000:3b:00.0"
    numa: int
    guid: str
    ports: tuple[SimPort, ...]
    slot: pcitree.Slot  # where it sits in its node's PCIe tree

    @property
    def pci_dir(self) -> str:
        return self.slot.parent


@dataclass(frozen=True, slots=True)
class SimNode:
    name: str
    kind: str
    devices: tuple[SimDevice, ...]
    pci: pcitree.NodePci  # its bridges and GPUs
    shape: str = ""  # "", "dgx" or "misbuilt"


@dataclass(slots=True)
class Layout:
    seed: int
    nodes: list[SimNode]
    by_key: dict[str, object] = field(default_factory=dict)

    def ports(self):
        for node in self.nodes:
            for dev in node.devices:
                for port in dev.ports:
                    yield node, dev, port

    def resolve(self, node: str, device: str | None, port: int | None) -> object:
        """The node, device or port a fault names; LayoutError saying what exists when it is not there."""
        n = self.by_key.get(node)
        if not isinstance(n, SimNode):
            last = self.nodes[-1].name
            raise LayoutError(f"no node {node!r} in this fabric (it has cn001..{last})")
        if device is None:
            return n
        d = self.by_key.get(f"{node}/{device}")
        if d is None:
            have = ", ".join(x.name for x in n.devices)
            raise LayoutError(f"{node} has no device {device!r} (it has {have})")
        if port is None:
            return d
        p = self.by_key.get(f"{node}/{device}/{port}")
        if p is None:
            have = ", ".join(str(x.number) for x in d.ports)
            raise LayoutError(f"{node}/{device} has no port {port} (it has {have})")
        return p


def node_kinds(nodes: int, seed: int) -> list[str]:
    """Mostly ConnectX-6; every fabric of 4+ nodes has each kind. cn001 is always ConnectX-6."""
    if nodes < 4:
        return ["cx6", "cx3", "roce"][:nodes]
    special = ["cx7"] * max(1, nodes * 15 // 100) + ["cx3"] * max(1, nodes // 20) + ["roce"] * max(1, nodes // 20)
    kinds = ["cx6"] * nodes
    for index, kind in zip(
        random.Random(f"fabric-mix|{seed}").sample(range(1, nodes), len(special)), special, strict=True
    ):
        kinds[index] = kind
    return kinds


def _guid(oui: int, serial: int) -> str:
    value = (oui << 40) | (0x0300 << 24) | (serial & 0xFFFFFF)
    h = f"{value:016x}"
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


def port_guid(dev: SimDevice, port: SimPort) -> int:
    """The 64-bit port GUID: the node GUID + port number, as ibsim gives a CA's ports."""
    return guid_int(dev.guid) + port.number


def guid_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


def port_gid(dev: SimDevice, port: SimPort) -> str:
    """GID 0 (`gids/0`): fe80::/64 + the port GUID on InfiniBand; on RoCE the link-local
    address of the port's MAC (the GUID's OUI and serial), as the kernel fills it."""
    if dev.model.link_layer == "InfiniBand":
        low = port_guid(dev, port)
    else:
        guid = guid_int(dev.guid)
        oui, serial = guid >> 40, (guid + port.number - 1) & 0xFFFFFF
        low = ((oui ^ 0x020000) << 40) | (0xFFFE << 24) | serial  # modified EUI-64: U/L bit flipped
    h = f"{(0xFE80 << 112) | low:032x}"
    return ":".join(h[i : i + 4] for i in range(0, 32, 4))


def build(
    seed: int, nodes: int, ports: int | None = None, hcas: int | None = None, shapes: dict[str, str] | None = None
) -> Layout:
    """The fabric; `shapes` (node -> "dgx" or "misbuilt") reshape nodes' PCIe trees, a dgx node has 8 HCAs."""
    shapes = shapes or {}
    if nodes < 1:
        raise LayoutError("--nodes must be at least 1")
    if ports is not None and not 1 <= ports <= 4:
        raise LayoutError("--ports must be between 1 and 4")
    if hcas is not None and not 1 <= hcas <= len(pcitree.BUSES):
        raise LayoutError(f"--hcas must be between 1 and {len(pcitree.BUSES)}")
    names = {node_name(i) for i in range(nodes)} if shapes else set()
    for name, shape in shapes.items():
        if name not in names:
            raise LayoutError(f"{name}:{shape}: no node {name!r} in this fabric (it has cn001..{node_name(nodes - 1)})")
    layout = Layout(seed, [])
    serial = int(unit(seed, "guid") * 0xFFFFFF)
    lid = _FIRST_LID
    for index, kind in enumerate(node_kinds(nodes, seed)):
        model = MODELS[kind]
        name = node_name(index)
        speed = model.speed
        if kind == "cx3" and unit(seed, name, "fdr10") < 0.5:
            speed = "FDR10"
        devices = []
        ifindex = 0
        shape = shapes.get(name, "")
        n_hcas = pcitree.DGX_HCAS if shape == "dgx" else hcas or model.default_hcas
        pci = pcitree.plan(shape, n_hcas, model.pcie_gts, model.pcie_width)
        for h, slot in enumerate(pci.slots):
            dev_name = f"{model.driver}_{h}"
            bus = int(slot.address[5:7], 16)
            port_list = []
            for number in range(1, (ports or model.default_ports) + 1):
                if model.link_layer == "Ethernet":
                    netdev, port_lid = f"enp{bus}s0f0np{number - 1}", 0
                else:
                    netdev, port_lid = f"ib{ifindex}", lid
                    lid += 1
                ifindex += 1
                port_list.append(SimPort(f"{name}/{dev_name}/{number}", number, netdev, port_lid))
            serial += GUID_BLOCK
            devices.append(
                SimDevice(
                    key=f"{name}/{dev_name}",
                    name=dev_name,
                    model=model,
                    speed=speed,
                    pci_addr=slot.address,
                    numa=slot.numa,
                    guid=_guid(_OUI[model.driver], serial),
                    ports=tuple(port_list),
                    slot=slot,
                )
            )
        node = SimNode(name, kind, tuple(devices), pci, shape)
        layout.nodes.append(node)
        layout.by_key[name] = node
        for dev in devices:
            layout.by_key[dev.key] = dev
            for port in dev.ports:
                layout.by_key[port.key] = port
    return layout
