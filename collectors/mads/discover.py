"""Discovery: every node, port and link reachable from this host's port, by directed-route SMPs.

Breadth-first from the local port, as ibnetdiscover does: NodeInfo through each port that is
LinkUp says what is on the other side (its GUID and the port we came in by: one link, both
ends), NodeDescription names it, and PortInfo of every switch port (and of each CA port
reached) gives its state and its active, enabled and supported width and speed. All queries
of a level go out together through the engine's window.

Speeds are read as iblinkinfo reads them (collectors.mads.portspeed): a switch's external
ports through its port 0's capability masks, which may answer after them, so their speeds wait
for it; a port of a Mellanox device that is up at QDR is asked for ExtendedPortInfo, which
says whether the link is in fact FDR10.

A query that goes unanswered costs its own value and an entry in `errors`; what lies only
behind a switch that does not answer is not reached, and the port facing it says so.
"""

from __future__ import annotations

from collectors.model import ReadError

from . import mad
from .engine import Engine, Query
from .mad import Reply
from .model import FabricNode, FabricPort
from .portspeed import SpeedFields, decode_mlnx_ext_port_info, has_mlnx_ext_port_info, link_speeds, speed_fields

LINK_UP = 5


class Discovery:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.nodes: dict[int, FabricNode] = {}
        self.errors: list[ReadError] = []
        self.local: tuple[int, int] | None = None
        # A switch's port 0 speed fields (None: port 0 unread, each port's own apply), and the PortInfo
        # of its ports that came in before port 0's did.
        self._fields: dict[int, SpeedFields | None] = {}
        self._waiting: dict[int, dict[int, tuple[bytes, tuple[int, ...]]]] = {}

    def start(self) -> None:
        self._node_info((), None)

    # -- queries -------------------------------------------------------------------------------------

    def _smp(self, attribute: int, modifier: int, route: tuple[int, ...], what: str, callback, group=None) -> None:
        def build(tid: int) -> bytes:
            return mad.directed_get(tid, attribute, modifier, route)

        self.engine.submit(
            Query(
                mad.CLASS_SUBN_DIRECTED_ROUTE,
                build,
                mad.PERMISSIVE_LID,
                0,
                0,
                callback,
                what,
                group=group or ("route", route),
            )
        )

    def _node_info(self, route: tuple[int, ...], via: tuple[FabricNode, int] | None) -> None:
        what = "NodeInfo of this host's port" if via is None else f"NodeInfo beyond {_port_label(*via)}"
        self._smp(
            mad.ATTR_NODE_INFO, 0, route, what, lambda reply, error: self._got_node_info(route, via, reply, error)
        )

    def _port_info(self, node: FabricNode, number: int, route: tuple[int, ...]) -> None:
        self._smp(
            mad.ATTR_PORT_INFO,
            number,
            route,
            f"PortInfo of {_port_label(node, number)}",
            lambda reply, error: self._got_port_info(node, number, route, reply, error),
        )

    # -- replies -------------------------------------------------------------------------------------

    def _got_node_info(
        self, route: tuple[int, ...], via: tuple[FabricNode, int] | None, reply: Reply | None, error: str | None
    ) -> None:
        if reply is None:
            where = "this host's port" if via is None else _port_label(*via)
            self.errors.append(ReadError(where, f"NodeInfo beyond it: {error}"))
            return
        try:
            info = mad.decode_node_info(reply.data)
        except Exception as e:  # a short or garbled reply costs this node only
            self.errors.append(ReadError(_route_label(route), f"NodeInfo: unreadable reply ({e})"))
            return
        node = self.nodes.get(info.node_guid)
        if node is None:
            node = FabricNode(
                guid=info.node_guid,
                node_type=info.node_type,
                num_ports=info.num_ports,
                system_guid=info.system_guid,
                vendor_id=info.vendor_id,
                device_id=info.device_id,
                revision=info.revision,
                route=route,
            )
            self.nodes[node.guid] = node
            self._smp(
                mad.ATTR_NODE_DESCRIPTION,
                0,
                route,
                f"NodeDescription of {node.label}",
                lambda reply, error: self._got_description(node, reply, error),
            )
            if node.is_switch:
                for number in range(node.num_ports + 1):  # port 0: the switch's management port and LID
                    node.ports[number] = FabricPort(number, port_guid=info.port_guid)
                    self._port_info(node, number, route)
        if via is None:
            self.local = (node.guid, info.local_port)
        if not node.is_switch and info.local_port not in node.ports:
            node.ports[info.local_port] = FabricPort(info.local_port, port_guid=info.port_guid)
            self._port_info(node, info.local_port, route)
        if via is not None:
            self._link(via[0], via[1], node, info.local_port)

    def _link(self, a: FabricNode, a_port: int, b: FabricNode, b_port: int) -> None:
        a.ports.setdefault(a_port, FabricPort(a_port)).peer = (b.guid, b_port)
        b.ports.setdefault(b_port, FabricPort(b_port)).peer = (a.guid, a_port)

    def _got_description(self, node: FabricNode, reply: Reply | None, error: str | None) -> None:
        if reply is None:
            self.errors.append(ReadError(node.label, f"NodeDescription: {error}"))
            return
        node.description = mad.decode_node_description(reply.data)

    def _got_port_info(
        self, node: FabricNode, number: int, route: tuple[int, ...], reply: Reply | None, error: str | None
    ) -> None:
        port = node.ports[number]
        if reply is None:
            self.errors.append(ReadError(_port_label(node, number), f"PortInfo: {error}"))
            if node.is_switch and number == 0:
                self._port0_read(node, None)
            if node.is_switch and number > 0 and not error.startswith("not sent"):
                # Its state is unknown, not down: look beyond it, so what is cabled there is still found.
                self._node_info((*route, number), (node, number))
            return
        try:
            info = mad.decode_port_info(reply.data)
        except Exception as e:
            self.errors.append(ReadError(_port_label(node, number), f"PortInfo: unreadable reply ({e})"))
            if node.is_switch and number == 0:
                self._port0_read(node, None)
            return
        port.lid = info.lid if (number == 0 or not node.is_switch) else None
        port.state, port.phys_state = info.state, info.phys_state
        port.lmc = info.lmc if port.lid is not None else None
        if number == 0 and node.is_switch:
            self._port0_read(node, speed_fields(reply.data))
            return  # the management port: no link, only the switch's LID and what speed fields apply
        port.lanes = info.width_active
        port.width_enabled, port.width_supported = info.width_enabled, info.width_supported
        if not node.is_switch:
            self._speeds(node, number, reply.data, speed_fields(reply.data), route)
        elif node.guid in self._fields:
            self._speeds(node, number, reply.data, self._fields[node.guid] or speed_fields(reply.data), route)
        else:
            self._waiting.setdefault(node.guid, {})[number] = (bytes(reply.data), route)
        if info.phys_state != LINK_UP or port.peer is not None:
            return
        if node.is_switch:
            self._node_info((*route, number), (node, number))
        elif not route:  # this host's own port: the first hop out
            self._node_info((number,), (node, number))

    def _port0_read(self, node: FabricNode, fields: SpeedFields | None) -> None:
        """Port 0's speed fields are known (None: it did not answer, so each port's own apply)."""
        self._fields[node.guid] = fields
        for number, (data, route) in sorted(self._waiting.pop(node.guid, {}).items()):
            self._speeds(node, number, data, fields or speed_fields(data), route)

    def _speeds(self, node: FabricNode, number: int, data: bytes, fields: SpeedFields, route: tuple[int, ...]) -> None:
        port = node.ports[number]
        speeds = link_speeds(data, fields)
        port.speed, port.speed_enabled, port.speed_supported = speeds.active, speeds.enabled, speeds.supported
        mellanox = has_mlnx_ext_port_info(node.vendor_id, node.device_id)
        if port.phys_state == LINK_UP and port.speed == "QDR" and mellanox:
            self._smp(
                mad.ATTR_MLNX_EXT_PORT_INFO,
                number,
                route,
                f"ExtendedPortInfo of {_port_label(node, number)}",
                lambda reply, error: self._got_fdr10(node, number, reply, error),
                # Its own group: a vendor attribute left unanswered must not fail the node's other queries.
                group=("mlnx-ext-port-info", route),
            )

    def _got_fdr10(self, node: FabricNode, number: int, reply: Reply | None, error: str | None) -> None:
        port = node.ports[number]
        try:
            if reply is None:
                raise ValueError(error)
            fdr10 = decode_mlnx_ext_port_info(reply.data)
        except Exception as e:  # the port stays at QDR, as PortInfo alone says
            self.errors.append(ReadError(_port_label(node, number), f"ExtendedPortInfo (FDR10): {e}"))
            return
        if fdr10.supported:
            port.speed_supported = (port.speed_supported or frozenset()) | {"FDR10"}
        if fdr10.enabled:
            port.speed_enabled = (port.speed_enabled or frozenset()) | {"FDR10"}
        if fdr10.active:
            port.speed = "FDR10"


def _port_label(node: FabricNode, number: int) -> str:
    return f"{node.label} port {number}"


def _route_label(route: tuple[int, ...]) -> str:
    return "directed route " + (",".join(map(str, (0, *route))))
