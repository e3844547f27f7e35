"""Reading raw samples: the packed node-poll rows (models.NodePoll, packing.py) as one `Sample` per port and poll.

Every reader of raw samples goes through here (the API, the port charts, the rollups, the
admin), so none needs to know how they are packed. A port's samples are found by its
node's rows, (node, ts)-indexed, and only that port's entry of each row is decoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from fabricweb.inventory.models import Node, Port

from .columns import DELTA_COLUMNS
from .models import NodePoll
from .packing import entries_of, unpack

HEAD = ("interval_s", "state_id", "phys_state_id", "speed", "lanes", "reset", "capped")
_CHUNK = 500  # node-poll rows fetched per round trip while a port's entries are looked for


class Sample:
    """One port at one poll: its link and the counter deltas since its previous poll (None when unknown)."""

    __slots__ = ("id", "node_id", "port_id", "ts", *HEAD, *DELTA_COLUMNS)

    def __init__(self, row_id: int, node_id: int, ts: datetime, port_id: int, head: tuple, deltas: tuple) -> None:
        self.id, self.node_id, self.ts, self.port_id = row_id, node_id, ts, port_id
        (
            self.interval_s,
            self.state_id,
            self.phys_state_id,
            self.speed,
            self.lanes,
            self.reset,
            self.capped,
        ) = head
        for name, value in zip(DELTA_COLUMNS, deltas, strict=True):
            setattr(self, name, value)

    @property
    def pk(self) -> int:
        """The id of the node-poll row it is packed in (with ts, the API's cursor)."""
        return self.id

    def deltas(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in DELTA_COLUMNS}

    def __repr__(self) -> str:
        return f"<Sample port {self.port_id} at {self.ts.isoformat()}>"


def _node_id(port: Port) -> int:
    return port.device.node_id


def _rows(
    node_id: int | None, since, until, newest_first: bool, after: tuple[datetime, int] | None, using: str = "default"
):
    rows = NodePoll.objects.using(using)
    if node_id is not None:
        rows = rows.filter(node_id=node_id)
    if since is not None:
        rows = rows.filter(ts__gte=since)
    if until is not None:
        rows = rows.filter(ts__lt=until)
    if after is not None:
        when, pk = after
        if newest_first:
            rows = rows.filter(ts__lte=when).exclude(ts=when, id__gte=pk)
        else:
            rows = rows.filter(ts__gte=when).exclude(ts=when, id__lte=pk)
    order = ("-ts", "-id") if newest_first else ("ts", "id")
    return rows.order_by(*order).values_list("id", "node_id", "ts", "ports")


def of_port(
    port: Port,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    newest_first: bool = False,
    after: tuple[datetime, int] | None = None,
    limit: int | None = None,
    using: str = "default",
) -> list[Sample]:
    """The port's samples in [since, until), in time order, after the (ts, id) cursor `after`, at most `limit`."""
    out: list[Sample] = []
    pid = port.pk
    rows = _rows(_node_id(port), since, until, newest_first, after, using)
    for row_id, node_id, ts, data in rows.iterator(_CHUNK):
        found = entries_of(bytes(data), pid)
        for _, head, deltas in reversed(found) if newest_first else found:
            out.append(Sample(row_id, node_id, ts, pid, head, deltas))
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def last_of_port(port: Port) -> Sample | None:
    """The port's newest sample (by ts): in the node's newest row unless the port was not polled there."""
    node_id = _node_id(port)
    for rows in (_rows(node_id, None, None, True, None)[:4], _rows(node_id, None, None, True, None)):
        for row_id, row_node, ts, data in rows.iterator(_CHUNK):
            found = entries_of(bytes(data), port.pk)
            if found:
                _, head, deltas = found[-1]
                return Sample(row_id, row_node, ts, port.pk, head, deltas)
    return None


def between(
    since: datetime | None = None,
    until: datetime | None = None,
    nodes: Iterable[Node] | None = None,
    using: str = "default",
) -> Iterator[Sample]:
    """Every port's samples in [since, until) (of `nodes` only, when given), in time order, from database `using`."""
    node_ids = None if nodes is None else [n.pk for n in nodes]
    rows = _rows(None, since, until, False, None, using)
    if node_ids is not None:
        rows = rows.filter(node_id__in=node_ids)
    for row_id, node_id, ts, data in rows.iterator(_CHUNK):
        for port_id, head, deltas in unpack(bytes(data)):
            yield Sample(row_id, node_id, ts, port_id, head, deltas)
