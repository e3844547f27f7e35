"""Links from both ends: who is cabled to whom, what both ends support, and which end speaks for the link.

From one full sweep (schema.FabricIn) and the inventory's ports:

- every port the sweep read is an End, named as operators name it: a switch port `leaf07 port 12`,
  a host's port in the inventory `cn042 mlx5_0/1` (joined by port GUID: GID 0 on the host,
  NodeInfo.PortGUID in the fabric), any other channel adapter by its description `nfs01 mlx5_0 port 1`;
- every link is a pair of Ends, and what both ends support is the fastest speed and widest width
  common to both (iblinkinfo's "Could be"): the expected link, after operator policy, before history;
- one end speaks for the link's own state (down, degraded, flapping), so a link is one problem, not
  one per end: a host's port whose agent reports it, else the switch port (an agentless adapter's is read
  by the sweeps, which say nothing of it once they no longer reach it); of two switch ports, the one first
  by name and number. The other end's counters (symbol errors, discards...) are its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from collectors.link import SPEEDS, WIDTHS, Rate, best_common
from fabricweb.health.rules.findings import port_label
from fabricweb.inventory.models import Node, Port

from .schema import FabricIn, FabricPortIn

LINK_UP = 5
NODE_TYPE_SWITCH = 2

EndKey = tuple[str, int]  # (node GUID, port number)


def widths_of(mask: int | None) -> frozenset[int] | None:
    return None if mask is None else frozenset(w for i, w in enumerate(WIDTHS) if mask >> i & 1)


def speeds_of(mask: int | None) -> frozenset[str] | None:
    return None if mask is None else frozenset(s.name for i, s in enumerate(SPEEDS) if mask >> i & 1)


@dataclass(slots=True)
class End:
    key: EndKey
    label: str  # untrusted text in it (descriptions): escape when rendering
    switch: str | None  # the switch's inventory name, for a switch port
    port: Port | None  # the inventory port, when there is one
    reading: FabricPortIn

    @property
    def agent(self) -> bool:
        """A host's port, its agent reporting it (not an agentless adapter's: fabricweb.fabric.adapters)."""
        return self.switch is None and self.port is not None and self.port.device.node.kind == Node.Kind.HOST

    @property
    def link_up(self) -> bool:
        return self.reading.phys_state == LINK_UP

    @property
    def state_text(self) -> str:
        r = self.reading
        return f"{IBSTAT_STATES.get(r.state, '?')}/{PHYS_STATES.get(r.phys_state, '?')}"


@dataclass(slots=True)
class LinkSeen:
    a: End  # ends ordered by (GUID, port)
    b: End
    capable: Rate | None  # what both ends support

    @property
    def inter_switch(self) -> bool:
        return self.a.switch is not None and self.b.switch is not None

    @property
    def owner(self) -> End:
        """The end that reports the link's own state."""
        if self.a.agent:
            return self.a
        if self.b.agent:
            return self.b
        if self.a.switch is not None and self.b.switch is not None:
            return min((self.a, self.b), key=lambda e: (e.switch, e.key[1]))
        return self.a if self.a.switch is not None else self.b


class FabricView:
    """The ends and links of one full sweep."""

    def __init__(self, fabric: FabricIn, switch_names: dict[str, str], host_ports: dict[str, Port],
                 switch_ports: dict[EndKey, Port]) -> None:  # fmt: skip
        """`switch_names`: switch GUID -> inventory name; `host_ports`: port GUID -> the host's Port (device
        and node attached); `switch_ports`: (switch GUID, number) -> the switch's Port."""
        self.ends: dict[EndKey, End] = {}
        self.claims: list = []  # port GUIDs several hosts claim (linkstore.GuidClaim), judged by viewfindings
        nodes = fabric.nodes
        for reading in fabric.ports:
            node = nodes[reading.node]
            key = (node.guid, reading.number)
            if node.node_type == NODE_TYPE_SWITCH:
                if reading.number == 0:
                    continue  # the switch's management port: no cable
                name = switch_names.get(node.guid)
                label = f"{name or node.description or node.guid} port {reading.number}"
                self.ends[key] = End(key, label, name, switch_ports.get(key), reading)
                continue
            host_port = host_ports.get(reading.port_guid) if reading.port_guid else None
            if host_port is not None:
                device = host_port.device
                label = port_label(device.node.name, device.name, host_port.number)
            else:
                label = f"{node.description or node.guid} port {reading.number}"
            self.ends[key] = End(key, label, None, host_port, reading)
        self.links: dict[tuple[EndKey, EndKey], LinkSeen] = {}
        for key, end in self.ends.items():
            r = end.reading
            if r.peer_node is None:
                continue
            peer_key = (nodes[r.peer_node].guid, r.peer_port)
            peer = self.ends.get(peer_key)
            if peer is None:
                continue
            a, b = (end, peer) if key < peer_key else (peer, end)
            if (a.key, b.key) in self.links:
                continue
            capable = best_common(
                speeds_of(a.reading.speed_supported),
                widths_of(a.reading.width_supported),
                speeds_of(b.reading.speed_supported),
                widths_of(b.reading.width_supported),
            )
            self.links[a.key, b.key] = LinkSeen(a, b, capable)
        self.peer_of: dict[EndKey, End] = {}
        for link in self.links.values():
            self.peer_of[link.a.key] = link.b
            self.peer_of[link.b.key] = link.a

    def link_of(self, key: EndKey) -> LinkSeen | None:
        peer = self.peer_of.get(key)
        if peer is None:
            return None
        return self.links.get((key, peer.key) if key < peer.key else (peer.key, key))


@dataclass(frozen=True, slots=True)
class PortFacts:
    """What fabric ingest keeps on an inventory port about its link (inventory.models.Port's fields)."""

    peer: Port | None
    peer_label: str
    capable_speed: str | None
    capable_lanes: int | None
    link_owner: bool

    @classmethod
    def of(cls, port: Port) -> PortFacts:
        return cls(port.peer, port.peer_label, port.capable_speed, port.capable_lanes, port.link_owner)

    def differs(self, port: Port) -> bool:
        return port.peer_id != (self.peer.pk if self.peer is not None else None) or (
            port.peer_label,
            port.capable_speed,
            port.capable_lanes,
            port.link_owner,
        ) != (self.peer_label, self.capable_speed, self.capable_lanes, self.link_owner)

    def set_on(self, port: Port) -> None:
        port.peer = self.peer
        port.peer_label, port.capable_speed, port.capable_lanes = (
            self.peer_label,
            self.capable_speed,
            self.capable_lanes,
        )
        port.link_owner = self.link_owner


FACT_FIELDS = ["peer", "peer_label", "capable_speed", "capable_lanes", "link_owner"]


def facts_for(view: FabricView, end: End) -> PortFacts | None:
    """The facts of an end's inventory port after this sweep; None when the sweep says nothing new
    (no link seen now: the port keeps naming what it was last cabled to)."""
    link = view.link_of(end.key)
    if link is None:
        return None
    peer = link.b if link.a is end else link.a
    capable = link.capable
    return PortFacts(
        peer.port,
        peer.label[:256],
        capable.speed if capable else None,
        capable.lanes if capable else None,
        link.owner is end,
    )
