"""Typed values of one fabric sweep. Missing means None, never 0.

Every field names the MAD attribute and field it comes from, as collectors/model.py names
sysfs files, so a value can be traced to its source without reading the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.model import ReadError, src

from .mad import NODE_TYPE_SWITCH, format_guid

FABRIC_SCHEMA_VERSION = 1


@dataclass(slots=True)
class FabricPort:
    number: int = field(metadata=src("PortInfo attribute modifier / NodeInfo.LocalPortNum"))
    port_guid: int | None = field(default=None, metadata=src("NodeInfo.PortGUID (a switch's ports share one)"))
    lid: int | None = field(default=None, metadata=src("PortInfo.LID (CA ports, switch port 0)"))
    lmc: int | None = field(default=None, metadata=src("PortInfo.LMC: the port answers 2**LMC LIDs from its LID"))
    state: int | None = field(default=None, metadata=src("PortInfo.PortState: 1 Down ... 4 Active"))
    phys_state: int | None = field(default=None, metadata=src("PortInfo.PortPhysicalState: 2 Polling, 5 LinkUp"))
    lanes: int | None = field(default=None, metadata=src("PortInfo.LinkWidthActive"))
    speed: str | None = field(
        default=None, metadata=src("PortInfo.LinkSpeedActive / ExtActive / ExtActive2, FDR10 from ExtendedPortInfo")
    )
    width_enabled: frozenset[int] | None = field(default=None, metadata=src("PortInfo.LinkWidthEnabled"))
    width_supported: frozenset[int] | None = field(default=None, metadata=src("PortInfo.LinkWidthSupported"))
    speed_enabled: frozenset[str] | None = field(
        default=None, metadata=src("PortInfo.LinkSpeedEnabled / ExtEnabled / ExtEnabled2, ExtendedPortInfo (FDR10)")
    )
    speed_supported: frozenset[str] | None = field(
        default=None, metadata=src("PortInfo.LinkSpeedSupported / ExtSupported / ExtSupported2, ExtendedPortInfo")
    )
    # The far end (node GUID, port number), from a NodeInfo sent out of this port; None: no link seen.
    peer: tuple[int, int] | None = field(default=None, metadata=src("NodeInfo.NodeGUID/LocalPortNum beyond"))
    # Base units (data in bytes); None when the PMA did not answer or does not have the counter.
    counters: dict[str, int | None] = field(
        default_factory=dict, metadata=src("PMA PortCounters / PortCountersExtended")
    )


@dataclass(slots=True)
class FabricNode:
    guid: int = field(metadata=src("NodeInfo.NodeGUID"))
    node_type: int = field(metadata=src("NodeInfo.NodeType: 1 CA, 2 switch, 3 router"))
    num_ports: int = field(metadata=src("NodeInfo.NumPorts"))
    description: str | None = field(default=None, metadata=src("NodeDescription (untrusted: set on the node)"))
    system_guid: int | None = field(default=None, metadata=src("NodeInfo.SystemImageGUID"))
    vendor_id: int | None = field(default=None, metadata=src("NodeInfo.VendorID"))
    device_id: int | None = field(default=None, metadata=src("NodeInfo.DeviceID"))
    revision: int | None = field(default=None, metadata=src("NodeInfo.Revision"))
    route: tuple[int, ...] = field(default=(), metadata=src("the directed route it was first reached by"))
    ports: dict[int, FabricPort] = field(default_factory=dict, metadata=src("PortInfo per port"))
    # A switch's linear forwarding table: byte L is the out port for LID L (255: none); None when not read.
    lft: bytes | None = field(
        default=None, metadata=src("LinearForwardingTable blocks 0 .. SwitchInfo.LinearFDBTop / 64")
    )

    @property
    def is_switch(self) -> bool:
        return self.node_type == NODE_TYPE_SWITCH

    @property
    def lid(self) -> int | None:
        """A switch's LID is its port 0's; a CA has one per port."""
        port0 = self.ports.get(0)
        return port0.lid if port0 is not None else None

    @property
    def label(self) -> str:
        """`leaf07 (0x0002c90300a1b2c0)`, for messages."""
        return f"{self.description} ({format_guid(self.guid)})" if self.description else format_guid(self.guid)


@dataclass(slots=True)
class FabricSweep:
    collector: str
    collected_at: float  # seconds since the epoch, UTC: when the sweep started
    duration_s: float = 0.0
    mode: str = "full"  # "full": discovery, links and counters; "counters": counters of known switches only
    local: tuple[int, int] | None = None  # (node GUID, port) the sweep was sent from
    nodes: list[FabricNode] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)
    queries: int = 0  # MADs sent, retries included
    schema: int = FABRIC_SCHEMA_VERSION
    routes: bool = False  # whether the switches' forwarding tables were read in this sweep
