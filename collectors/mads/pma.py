"""The counters of every switch port, from each switch's performance management agent (PMA), and of the
ports of the channel adapters central names (those no host agent reads: docs/fabric.md, "Channel adapters
without an agent").

Two queries per port, routed by the switch's LID, or a channel adapter port's own LID (so a subnet manager
must have assigned LIDs): PortCounters (the error counters, PortXmitWait, 32-bit data) and PortCountersExtended
(64-bit data and packets, as `perfquery -x` reads). When the extended attribute answers, its
64-bit data and packet counts replace the 32-bit ones, which stop at all-ones within seconds
on a busy link. Queries are interleaved across switches, so one switch that does not answer
holds at most a few of the engine's slots while the others go on.
"""

from __future__ import annotations

from itertools import zip_longest

from collectors.model import ReadError

from . import mad
from .engine import Engine, Query
from .mad import Reply
from .model import FabricNode

# 32-bit PortCounters values that the extended attribute's 64-bit twins replace.
SUPERSEDED = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")
# Every counter a fabric snapshot can carry, in the order it states them.
COUNTER_NAMES: tuple[str, ...] = (*mad.PORT_COUNTERS, *mad.PORT_COUNTERS_EXT)
NO_LID = "no LID: counters need a subnet manager to assign LIDs"


class Counters:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.errors: list[ReadError] = []

    def query(self, switches: list[FabricNode], adapters: list[FabricNode] = ()) -> None:
        """Query every port of `switches` and of the channel adapters `adapters` (each port at its own LID)."""
        per_target = []
        for node in switches:
            lid = node.lid
            if not lid:
                self.errors.append(ReadError(node.label, NO_LID))
                continue
            per_target.append([(node, lid, number) for number in sorted(node.ports) if number > 0])
        for node in adapters:
            for number in sorted(node.ports):
                lid = node.ports[number].lid
                if lid:
                    per_target.append([(node, lid, number)])
                elif number > 0:
                    self.errors.append(ReadError(f"{node.label} port {number}", NO_LID))
        for batch in zip_longest(*per_target):
            for item in batch:
                if item is not None:
                    self._port(*item)

    def _port(self, node: FabricNode, lid: int, number: int) -> None:
        port = node.ports[number]
        port.counters = dict.fromkeys(COUNTER_NAMES)
        label = f"{node.label} port {number}"
        for attribute, name in (
            (mad.ATTR_PORT_COUNTERS, "PortCounters"),
            (mad.ATTR_PORT_COUNTERS_EXT, "PortCountersExtended"),
        ):

            def build(tid: int, attribute=attribute) -> bytes:
                return mad.pma_get(tid, attribute, number)

            def done(reply: Reply | None, error: str | None, name=name) -> None:
                self._got(node, number, label, name, reply, error)

            self.engine.submit(
                Query(
                    mad.CLASS_PERFORMANCE,
                    build,
                    lid,
                    mad.GSI_QP,
                    mad.GSI_QKEY,
                    done,
                    f"{name} of {label}",
                    ("pma", lid),
                )
            )

    def _got(
        self, node: FabricNode, number: int, label: str, name: str, reply: Reply | None, error: str | None
    ) -> None:
        counters = node.ports[number].counters
        if reply is None:
            self.errors.append(ReadError(label, f"{name}: {error}"))
            return
        try:
            if mad.port_select(reply.data) != number:
                raise mad.MadError(f"answers for port {mad.port_select(reply.data)}")
            if reply.attribute == mad.ATTR_PORT_COUNTERS_EXT:
                counters.update(mad.decode_port_counters_ext(reply.data))
                for superseded in SUPERSEDED:
                    counters[superseded] = None
            else:
                values = mad.decode_port_counters(reply.data)
                if counters["port_xmit_data_64"] is not None:  # the extended reply came first
                    for superseded in SUPERSEDED:
                        values.pop(superseded)
                counters.update(values)
        except Exception as e:  # a garbled reply costs this port's counters of that attribute
            self.errors.append(ReadError(label, f"{name}: unreadable reply ({e})"))
