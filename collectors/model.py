"""Typed values read from one host. Missing means None, never 0.

Every field names the file (relative to the device or port directory) or the
verbs attribute it comes from in its metadata, so a value can be traced to its
source without reading the reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .facts import NODE_TYPES, PHYS_STATES, PORT_STATES, SCHEMA_VERSION, is_up
from .link import Rate

# Re-exported: the reader and the simulator name states by id through these (collectors/facts.py).
__all__ = ["NODE_TYPES", "PHYS_STATES", "PORT_STATES", "SCHEMA_VERSION"]


def src(path: str) -> dict[str, str]:
    """Field metadata naming the sysfs file (or verbs attribute) a value comes from."""
    return {"file": path}


@dataclass(frozen=True, slots=True)
class Enum:
    """A `"%d: %s"` sysfs value such as `4: ACTIVE`."""

    id: int
    name: str


@dataclass(slots=True)
class ReadError:
    """One file that could not be read or parsed, and why. Costs only that value."""

    path: str
    reason: str


@dataclass(slots=True)
class PciLink:
    """The HCA's PCIe link, from the PCI function behind `<device>/device`."""

    address: str | None = field(default=None, metadata=src("device -> ../0000:3b:00.0"))
    current_gts: float | None = field(default=None, metadata=src("device/current_link_speed"))
    current_width: int | None = field(default=None, metadata=src("device/current_link_width"))
    max_gts: float | None = field(default=None, metadata=src("device/max_link_speed"))
    max_width: int | None = field(default=None, metadata=src("device/max_link_width"))
    numa_node: int | None = field(default=None, metadata=src("device/numa_node"))


@dataclass(slots=True)
class VerbsPort:
    """What libibverbs' ibv_query_port() says of a port (via pyverbs)."""

    state: int | None = field(default=None, metadata=src("verbs:state"))
    phys_state: int | None = field(default=None, metadata=src("verbs:phys_state"))
    speed: str | None = field(default=None, metadata=src("verbs:active_speed(_ex)"))
    lanes: int | None = field(default=None, metadata=src("verbs:active_width"))
    active_mtu: int | None = field(default=None, metadata=src("verbs:active_mtu"))
    max_mtu: int | None = field(default=None, metadata=src("verbs:max_mtu"))
    link_layer: str | None = field(default=None, metadata=src("verbs:link_layer"))
    lid: int | None = field(default=None, metadata=src("verbs:lid"))
    sm_lid: int | None = field(default=None, metadata=src("verbs:sm_lid"))


@dataclass(slots=True)
class VerbsDevice:
    """What libibverbs' ibv_query_device() says of a device (via pyverbs)."""

    fw_ver: str | None = field(default=None, metadata=src("verbs:fw_version"))
    # GUIDs formatted as sysfs prints them (0002:c903:00a1:b2c0), so the two compare.
    node_guid: str | None = field(default=None, metadata=src("verbs:node_guid"))
    sys_image_guid: str | None = field(default=None, metadata=src("verbs:sys_image_guid"))
    vendor_id: int | None = field(default=None, metadata=src("verbs:vendor_id"))
    vendor_part_id: int | None = field(default=None, metadata=src("verbs:vendor_part_id"))
    hw_ver: int | None = field(default=None, metadata=src("verbs:hw_ver"))
    phys_port_cnt: int | None = field(default=None, metadata=src("verbs:phys_port_cnt"))


@dataclass(slots=True)
class Disagreement:
    """sysfs and verbs report the same fact differently."""

    field: str
    sysfs: object
    verbs: object


@dataclass(slots=True)
class Port:
    number: int = field(metadata=src("ports/<n>"))
    state: Enum | None = field(default=None, metadata=src("ports/<n>/state"))
    phys_state: Enum | None = field(default=None, metadata=src("ports/<n>/phys_state"))
    rate: Rate | None = field(default=None, metadata=src("ports/<n>/rate"))
    link_layer: str | None = field(default=None, metadata=src("ports/<n>/link_layer"))
    lid: int | None = field(default=None, metadata=src("ports/<n>/lid"))
    sm_lid: int | None = field(default=None, metadata=src("ports/<n>/sm_lid"))
    lmc: int | None = field(default=None, metadata=src("ports/<n>/lid_mask_count"))
    cap_mask: int | None = field(default=None, metadata=src("ports/<n>/cap_mask"))
    # The lower 64 bits of GID 0: what the fabric knows this port by (NodeInfo.PortGUID), `0x0c42a10300a1b2c1`.
    port_guid: str | None = field(default=None, metadata=src("ports/<n>/gids/0"))
    # Base units (data in bytes); None when the file could not be read.
    counters: dict[str, int | None] = field(default_factory=dict, metadata=src("ports/<n>/counters/*"))
    counters_ext: dict[str, int | None] = field(
        default_factory=dict, metadata=src("ports/<n>/counters_ext/* (kernels before 4.5)")
    )
    capped: list[str] = field(default_factory=list, metadata=src("counters at all-ones for their PMA width"))
    hw_counters: dict[str, int | None] = field(default_factory=dict, metadata=src("ports/<n>/hw_counters/*"))
    netdevs: list[str] = field(default_factory=list, metadata=src("device/net/<if>/dev_port"))
    # A RoCE port's PFC, pause-storm, CNP and loss counters (collectors.roce.Lossless); None: not RoCE.
    lossless: object | None = field(default=None, metadata=src("hw_counters/* and the netdev's ethtool statistics"))
    verbs: VerbsPort | None = field(default=None, metadata=src("pyverbs query_port"))
    disagreements: list[Disagreement] = field(default_factory=list, metadata=src("sysfs vs verbs"))

    @property
    def is_up(self) -> bool:
        return self.state is not None and is_up(self.state.id)


@dataclass(slots=True)
class Device:
    name: str = field(metadata=src("<device>"))
    node_type: Enum | None = field(default=None, metadata=src("node_type"))
    node_guid: str | None = field(default=None, metadata=src("node_guid"))
    sys_image_guid: str | None = field(default=None, metadata=src("sys_image_guid"))
    fw_ver: str | None = field(default=None, metadata=src("fw_ver"))
    hca_type: str | None = field(default=None, metadata=src("hca_type"))
    board_id: str | None = field(default=None, metadata=src("board_id"))
    hw_rev: str | None = field(default=None, metadata=src("hw_rev"))
    node_desc: str | None = field(default=None, metadata=src("node_desc (untrusted: settable by root)"))
    pci: PciLink | None = field(default=None, metadata=src("device/"))
    # SR-IOV: only a virtual function's PCI function has `physfn`, a link to its physical function.
    # None: no PCI function (rxe, siw), or physfn unreadable.
    virtual_function: bool | None = field(default=None, metadata=src("device/physfn (present: a VF)"))
    physical_function: str | None = field(default=None, metadata=src("device/physfn -> ../0000:41:00.0"))
    hw_counters: dict[str, int | None] = field(default_factory=dict, metadata=src("hw_counters/*"))
    ports: list[Port] = field(default_factory=list, metadata=src("ports/"))
    verbs: VerbsDevice | None = field(default=None, metadata=src("pyverbs query_device"))
    disagreements: list[Disagreement] = field(default_factory=list, metadata=src("sysfs vs verbs"))
    # From the PCI function up to the root port (collectors.pcimodel.PciePath); None: unknown.
    pcie_path: object | None = field(default=None, metadata=src("device -> /sys/devices/pci*/.../<function>"))


@dataclass(slots=True)
class Snapshot:
    host: str
    collected_at: float  # seconds since the epoch, UTC
    devices: list[Device] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)
    sysfs_root: str = "/sys"
    pyverbs: str = "not used"  # "used", "not installed", "no devices", or an error
    schema: int = SCHEMA_VERSION
    # Display and 3D controllers (collectors.pcimodel.Gpu), each with its relation to every RDMA device.
    gpus: list = field(default_factory=list)
