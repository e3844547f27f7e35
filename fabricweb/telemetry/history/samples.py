"""Reading raw samples: the packed node-poll rows (models.NodePoll, storage/packing.py) as one `Sample` per port-poll.

Every reader of raw samples goes through here (the API, the port charts, the rollups, the
admin), so none needs to know how they are packed. A port's samples are found by its
node's rows, (node, ts)-indexed, and only that port's entry of each row is decoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from fabricweb.inventory.models import Node, Port

from ..models import NodePoll
from ..storage.columns import DELTA_COLUMNS
from ..storage.packing import HEAD, entries_of, unpack

_CHUNK = 2000  # node-poll rows fetched per query


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
    node_ids: list[int] | None,
    since: datetime | None,
    until: datetime | None,
    *,
    newest_first: bool = False,
    after: tuple[datetime, int] | None = None,
    using: str = "default",
    chunk: int = _CHUNK,
) -> Iterator[tuple[int, int, datetime, bytes]]:
    """(id, node id, ts, packed bytes) of the node-poll rows asked for, in (ts, id) order.

    A page of `chunk` rows (doubling up to _CHUNK) per query, each after the last (keyset):
    memory stays bounded and no server-side cursor is needed (in autocommit Django's are
    WITH HOLD, which makes PostgreSQL materialize the whole result first).
    """
    rows = NodePoll.objects.using(using)
    if node_ids is not None:
        rows = rows.filter(node_id__in=node_ids) if len(node_ids) != 1 else rows.filter(node_id=node_ids[0])
    if since is not None:
        rows = rows.filter(ts__gte=since)
    if until is not None:
        rows = rows.filter(ts__lt=until)
    order = ("-ts", "-id") if newest_first else ("ts", "id")
    rows = rows.order_by(*order).values_list("id", "node_id", "ts", "ports")
    while True:
        page = rows
        if after is not None:
            when, pk = after
            if newest_first:
                page = page.filter(ts__lte=when).exclude(ts=when, id__gte=pk)
            else:
                page = page.filter(ts__gte=when).exclude(ts=when, id__lte=pk)
        got = list(page[:chunk])
        for row_id, node_id, ts, data in got:
            yield row_id, node_id, ts, bytes(data)
        if len(got) < chunk:
            return
        after = (got[-1][2], got[-1][0])
        chunk = min(2 * chunk, _CHUNK)  # a port missing from the first rows (vanished) may be far back


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
    # A port is in nearly every row of its node: a page of `limit` rows nearly always suffices.
    chunk = _CHUNK if limit is None else max(limit, 16)
    rows = _rows([_node_id(port)], since, until, newest_first=newest_first, after=after, using=using, chunk=chunk)
    for row_id, node_id, ts, data in rows:
        found = entries_of(data, pid)
        for _, head, deltas in reversed(found) if newest_first else found:
            out.append(Sample(row_id, node_id, ts, pid, head, deltas))
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def last_of_port(port: Port) -> Sample | None:
    """The port's newest sample (by ts): in the node's newest row unless the port was not polled there."""
    found = of_port(port, newest_first=True, limit=1)
    return found[0] if found else None


def between(
    since: datetime | None = None,
    until: datetime | None = None,
    nodes: Iterable[Node] | None = None,
    using: str = "default",
) -> Iterator[Sample]:
    """Every port's samples in [since, until) (of `nodes` only, when given), in time order, from database `using`."""
    node_ids = None if nodes is None else [n.pk for n in nodes]
    for row_id, node_id, ts, data in _rows(node_ids, since, until, using=using):
        for port_id, head, deltas in unpack(data):
            yield Sample(row_id, node_id, ts, port_id, head, deltas)


def entries_between(since: datetime, until: datetime) -> Iterator[tuple[int, tuple, tuple]]:
    """Every port's (port id, head, deltas) in [since, until), as storage/packing.py gives them: for the rollups,
    which need no `Sample` (building one costs as much as decoding it)."""
    for _, _, _, data in _rows(None, since, until):
        yield from unpack(data)
