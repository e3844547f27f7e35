"""The most congested links of the fabric now, for the fabric page, and where each one's congestion starts.

A port's congestion is its last poll's share of the link's time lost waiting for credits: port_xmit_wait in the
bytes one count is on its device (collectors.xmitwait.congestion_ratio of inventory.readings.last_wait), the number
/metrics serves as infiniband_port_congestion_ratio and the congestion rule judges over its window. The sending
end is the congested one (it counts what it could not send), so a link is named from it: `leaf01 port 7 ↔ spine01
port 1`. Host ports of nodes that stopped reporting are left out (their last poll is not now), as are vanished ones.

Congestion spreads backwards from where it starts: a port that cannot send because the next one cannot either
waits too. Where the switches' forwarding tables are stored (SwitchRoutes, a sweep that read them), each congested
port is told apart: the root, where the ports its traffic goes on to next (the next switch's ports toward the same
destination LIDs) are not congested; or a victim of the first one that is. Congested, for this, is over the
congestion rule's threshold (`congestion_share`) in the last poll. Without tables: "root unknown".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Max

from collectors import xmitwait
from collectors.mads.mad import NO_ROUTE
from fabricweb.health.records import context
from fabricweb.health.rules.findings import port_label
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Node, NodeReadings, Port

from .linkrows import LinkRow, link_rows
from .models import SwitchRoutes

if TYPE_CHECKING:
    from .paths import RouteGraph

TOP = 20
ROOT, ROOT_UNKNOWN = "root", "root unknown"
End = tuple[str, int]  # (node GUID, port number), as the links and tables name a port


@dataclass(frozen=True, slots=True)
class Congested:
    """One congested port, the sending end of its link."""

    port: Port  # with its device and node
    end: str  # `leaf01 port 7`, `cn001 mlx5_0/1`
    far_end: str  # the far end of its cable in words, "" where the fabric has not seen it
    share: float  # of the link's time lost in its last poll (above 1: the unit does not fit the device)
    unit: str  # `8 bytes per count on Quantum-2`, `8 bytes per count, assumed`
    root: str  # ROOT, `victim of spine01 port 3`, or ROOT_UNKNOWN

    @property
    def percent(self) -> float:
        return self.share * 100


def shares() -> dict[int, tuple[float, str]]:
    """Port id -> (share of link time lost in its last poll, the unit in words), for every port that lost any."""
    waits: dict[int, list] = {}
    for document in NodeReadings.objects.order_by().values_list("counters", flat=True).iterator(chunk_size=500):
        for pk, _, _, _, wait in readings.counters_of(document, hw=False):
            if wait and wait[0]:
                waits[pk] = wait
    ports = (
        Port.objects.filter(pk__in=list(waits), vanished_at__isnull=True)
        .exclude(portfacts.node_stale_q())
        .select_related("device")
    )
    out = {}
    for port in ports:
        link = portfacts.link(port)
        rate = context.rate(link.speed, link.lanes) if link is not None else None
        device = xmitwait.device_id(port.device.hca_type, port.device.board_id)
        counts, seconds = waits[port.pk]
        share = xmitwait.congestion_ratio(counts, device, rate, seconds)
        if share:
            out[port.pk] = (share, xmitwait.xmit_wait_unit(device).short())
    return out


class KeptTop:
    """top()'s last answer and what it was made from (the database, the newest ingest of any node, the routes' read
    time, the limit): the fabric page refreshes every few seconds, the readings change once a poll, and reading them
    all costs what a /metrics scrape's counters do. Owner: this module; made again on use when any of those
    changed, dropped by forget() (docs/architecture.md, "What processes keep in memory")."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.made_from: tuple | None = None
        self.answer: list[Congested] = []


KEPT = KeptTop()


def top(limit: int = TOP) -> list[Congested]:
    """The `limit` most congested ports of the fabric, most first, each with the far end of its link and its root."""
    made_from = (
        connection.vendor,
        connection.settings_dict["NAME"],
        Node.objects.aggregate(newest=Max("last_ingested_at"))["newest"],
        SwitchRoutes.objects.aggregate(read=Max("read_at"))["read"],
        limit,
    )
    if KEPT.made_from != made_from:
        KEPT.made_from, KEPT.answer = made_from, _top(limit)
    return KEPT.answer


def _top(limit: int) -> list[Congested]:
    found = shares()
    best = sorted(found, key=lambda pk: -found[pk][0])[:limit]
    rows = Port.objects.filter(pk__in=best).select_related("device__node")
    by_pk = {p.pk: p for p in rows}
    over = context.thresholds().congestion_share
    roots = root_words(over, {pk: share for pk, (share, _) in found.items()}, best)
    out = []
    for pk in best:
        p = by_pk[pk]
        share, unit = found[pk]
        label = port_label(p.device.node.name, p.device.name, p.number)
        out.append(Congested(p, label, p.peer_label, share, unit, roots.get(pk, ROOT_UNKNOWN)))
    return out


def root_words(over: float, share: dict[int, float], ports: list[int]) -> dict[int, str]:
    """Port id -> ROOT or `victim of ...` for `ports`, from the stored tables; {} when none are stored."""
    if not SwitchRoutes.objects.exists():
        return {}
    from .paths import RouteGraph  # with numpy (0.15 s a process start), only where routes are walked

    graph = RouteGraph.load()
    ends: dict[int, End] = {}
    labels: dict[End, str] = {}
    for link in up_links(link_rows()):
        for pk, end, label in link:
            if pk is not None:
                ends[pk] = end
            labels[end] = label
    congested = {ends[pk] for pk, s in share.items() if s > over and pk in ends}
    out = {}
    for pk in ports:
        end = ends.get(pk)
        if end is None:
            continue
        words = mark(graph, end, congested, labels)
        if words is not None:
            out[pk] = words
    return out


def up_links(rows: list[LinkRow]) -> list[tuple[tuple[int | None, End, str], ...]]:
    """Each up link's two ends: (inventory port id, (node GUID, port), label)."""
    return [
        ((row.a_id, (row.a_guid, row.a_port), row.a_label), (row.b_id, (row.b_guid, row.b_port), row.b_label))
        for row in rows
        if row.gone_at is None
    ]


def mark(graph: RouteGraph, end: End, congested: set[End], labels: dict[End, str]) -> str | None:
    """ROOT, or `victim of <the first congested port its traffic goes on to>`, for the congested port `end`; None
    where the tables cannot say (a switch whose table was not read, a port with no cable in them)."""
    import numpy as np  # loaded with the graph (root_words)

    guid, number = end
    if guid in graph.index:  # a switch port: the destinations it carries are the LIDs its table sends out of it
        here = graph.index[guid]
        lids = np.flatnonzero(graph.table[here] == number)
        nxt = int(graph.hop_next[here, number])
        if nxt == -1:
            return ROOT  # the next hop is the destination's own port: nothing further on to wait for
        if nxt < 0 or not lids.size:
            return None
        came_in = _far_port(graph, here, number)
    elif end in graph.leaf_of:  # a host port: everything it sends goes on from its leaf, to any LID but its own
        nxt, came_in = graph.leaf_of[end]
        lids = np.setdiff1d(np.arange(graph.lids), graph.lids_of.get(end, ()))
    else:
        return None
    # (port 0 is the next switch itself: LIDs that end there go on nowhere)
    onward = {int(p) for p in np.unique(graph.table[nxt, lids]) if p not in (0, NO_ROUTE, came_in)}
    next_guid = next(g for g, i in graph.index.items() if i == nxt)
    for port in sorted(onward):
        if (next_guid, port) in congested:
            return f"victim of {labels.get((next_guid, port), f'{graph.names[nxt]} port {port}')}"
    return ROOT


def _far_port(graph: RouteGraph, switch: int, number: int) -> int | None:
    """The port of the next switch that switch[number] is cabled to."""
    link = graph.hops[switch][number].link
    nxt = graph.hops[switch][number].switch
    for port, hop in graph.hops[nxt].items():
        if hop.link == link and hop.switch == switch:
            return port
    return None
