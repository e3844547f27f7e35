"""Discovery: every node, port and link reachable from this host's port, by directed-route SMPs.

Breadth-first from the local port, as ibnetdiscover does: NodeInfo through each port that is
LinkUp says what is on the other side (its GUID and the port we came in by: one link, both
ends), NodeDescription names it, and PortInfo of every switch port (and of each CA port
reached) gives its state and its active, enabled and supported width and speed. All queries
of a level go out together through the engine's window.

A query that goes unanswered costs its own value and an entry in `errors`; what lies only
behind a switch that does not answer is not reached, and the port facing it says so.
"""

from __future__ import annotations

from collectors.model import ReadError

from . import mad
from .engine import Engine, Query
from .mad import Reply
from .model import FabricNode, FabricPort

LINK_UP = 5


class Discovery:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.nodes: dict[int, FabricNode] = {}
        self.errors: list[ReadError] = []
        self.local: tuple[int, int] | None = None

    def start(self) -> None:
        self._node_info((), None)

    # -- queries -------------------------------------------------------------------------------------

    def _smp(self, attribute: int, modifier: int, route: tuple[int, ...], what: str, callback) -> None:
        def build(tid: int) -> bytes:
            return mad.directed_get(tid, attribute, modifier, route)

        self.engine.submit(
            Query(
                mad.CLASS_SUBN_DIRECTED_ROUTE, build, mad.PERMISSIVE_LID, 0, 0, callback, what, group=("route", route)
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
            if node.is_switch and number > 0 and not error.startswith("not sent"):
                # Its state is unknown, not down: look beyond it, so what is cabled there is still found.
                self._node_info((*route, number), (node, number))
            return
        try:
            info = mad.decode_port_info(reply.data)
        except Exception as e:
            self.errors.append(ReadError(_port_label(node, number), f"PortInfo: unreadable reply ({e})"))
            return
        port.lid = info.lid if (number == 0 or not node.is_switch) else None
        port.state, port.phys_state = info.state, info.phys_state
        port.lmc = info.lmc if port.lid is not None else None
        if number == 0 and node.is_switch:
            return  # the management port: no link, only the switch's LID
        port.lanes, port.speed = info.width_active, info.speed_active
        port.width_enabled, port.width_supported = info.width_enabled, info.width_supported
        port.speed_enabled, port.speed_supported = info.speed_enabled, info.speed_supported
        if info.phys_state != LINK_UP or port.peer is not None:
            return
        if node.is_switch:
            self._node_info((*route, number), (node, number))
        elif not route:  # this host's own port: the first hop out
            self._node_info((number,), (node, number))


def _port_label(node: FabricNode, number: int) -> str:
    return f"{node.label} port {number}"


def _route_label(route: tuple[int, ...]) -> str:
    return "directed route " + (",".join(map(str, (0, *route))))
