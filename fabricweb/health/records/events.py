"""Event rows as lifecycle's state: load the open ones, apply lifecycle's actions, write back in bulk.

One EventBook serves a whole batch: actions change the rows in memory (so a second
snapshot of the same node in the batch sees the first one's events), and `write`
ends with one INSERT for the new events, one UPDATE for the changed ones and one for
the clean-poll counts of those only counted.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.storage.store import update_rows

from ..models import Event
from ..rules.findings import Severity
from ..signals import OPENED, RESOLVED, SEVERITY, events_changed
from .lifecycle import Action, Op, OpenEvent

log = logging.getLogger(__name__)

# (device, port) an event is about; (None, None) for the node itself.
Target = tuple[Device | None, Port | None]
CHANGED_FIELDS = ["severity", "message", "reason", "updated_at", "resolved_at", "clean_polls", "details"]


# What a book reads of an open event: all but its dates. Nothing that judges reads when an event opened or last
# changed, and a quiet poll writes its count alone (EventBook.write). Loaded as Events by the ORM, a node's open
# events cost ~18 µs each at every poll of the node (each timestamp ~3 µs in Django's loader, each model instance
# ~5); as StoredEvents, ~4 µs, and only those an action changes become Events.
_LOADED = (
    "id", "node_id", "device_id", "port_id", "kind", "severity", "key", "message", "reason", "clean_polls", "details",
)  # fmt: skip


class StoredEvent(namedtuple("StoredEvent", _LOADED)):
    """An open event as open_events loads it; EventBook makes it an Event when an action changes it."""

    __slots__ = ()

    @property
    def pk(self) -> int:
        return self.id

    def as_event(self) -> Event:
        """The Event of this row: its dates unread (read if asked for: a query each), resolved_at None."""
        event = Event.from_db(connection.alias, _LOADED, self)
        event.resolved_at = None  # (open_events' own condition)
        return event


def open_events(node_ids: list[int], kind: str | None = None) -> list[StoredEvent]:
    """The open events of these nodes. Raw SQL: this runs once per ingested batch, and compiling the ORM query cost
    several times what running it does (~0.3 ms against ~0.05 ms on SQLite); on PostgreSQL a list of 100
    placeholders cost ~0.4 ms more than one array (BENCHMARKS.md)."""
    if not node_ids:
        return []
    qn = connection.ops.quote_name
    columns = ", ".join(qn(c) for c in _LOADED)
    sql = f"SELECT {columns} FROM {qn(Event._meta.db_table)} WHERE {qn('resolved_at')} IS NULL AND {qn('node_id')} "
    params: list[object]
    if connection.vendor == "postgresql":
        # One array parameter: the same statement text for any batch, which the driver prepares once.
        sql += "= ANY(%s)"
        params = [list(node_ids)]
    else:
        sql += f"IN ({', '.join(['%s'] * len(node_ids))})"
        params = list(node_ids)
    if kind is not None:
        sql += f" AND {qn('kind')} = %s"
        params.append(str(kind))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    details = Event._meta.get_field("details").from_db_value  # (JSON text on both databases: Django's loaders)
    return [StoredEvent(*loaded, details(text, None, connection)) for *loaded, text in rows]


def target_of(key: str) -> str:
    """`cn042/mlx5_0/1` of `degraded:cn042/mlx5_0/1` (findings.port_key and friends)."""
    return key.partition(":")[2]


def _node_of(target: str) -> str:
    """`cn042` of `cn042/mlx5_0/1`: the same for a target and for every key whose target it is."""
    return target.partition("/")[0]


@dataclass(slots=True)
class Tally:
    opened: int = 0
    updated: int = 0
    resolved: int = 0
    alarms: list[str] = field(default_factory=list)  # "critical down:cn042/mlx5_0/1" opened or updated

    def as_dict(self) -> dict[str, int]:
        return {"opened": self.opened, "updated": self.updated, "resolved": self.resolved}


class EventBook:
    def __init__(self, open_rows: Iterable[Event | StoredEvent]) -> None:
        self.open: dict[str, Event | StoredEvent] = {e.key: e for e in open_rows}
        # The same events by node (of their target): open_for looks at a snapshot's node's alone, not
        # at every open event of a batch of a hundred nodes for each of them.
        self._by_node: dict[str, dict[str, Event | StoredEvent]] = {}
        for key, e in self.open.items():
            self._by_node.setdefault(_node_of(target_of(key)), {})[key] = e
        self.new: list[Event] = []
        self.dirty: dict[int, Event] = {}  # changed: CHANGED_FIELDS written
        self.counted: dict[int, Event] = {}  # a quiet poll counted, nothing else changed: clean_polls written
        self.changes: list[tuple[Event, str]] = []  # for events_changed: opened, severity changed, resolved
        self.tally = Tally()

    @classmethod
    def for_nodes(cls, node_ids: Iterable[int], kind: str | None = None) -> EventBook:
        return cls(open_events(list(node_ids), kind))

    def open_count(self, node: str) -> int:
        """How many events of `node` are open."""
        return len(self._by_node.get(node, ()))

    def targets_of(self, node: str, kinds: Container[str]) -> list[str]:
        """The targets of `node`'s open events of these kinds."""
        return [target_of(key) for key, e in self._by_node.get(node, {}).items() if e.kind in kinds]

    def open_for(self, targets: Mapping[str, Target]) -> dict[str, OpenEvent]:
        """lifecycle's view of the open events about the things in `targets`, and only those."""
        nodes = {_node_of(t) for t in targets}
        candidates = self._by_node.get(nodes.pop(), {}) if len(nodes) == 1 else self.open  # in the same order
        return {
            key: OpenEvent(key, e.kind, e.severity, e.message, e.clean_polls, e.details)
            for key, e in candidates.items()
            if target_of(key) in targets
        }

    def apply(self, actions: Iterable[Action], node: Node, targets: Mapping[str, Target], at: datetime) -> None:
        for a in actions:
            if a.op in (Op.OPEN, Op.UPDATE) and a.severity is not Severity.INFO:
                self.tally.alarms.append(f"{a.severity} {a.key}")
            if a.op is Op.OPEN:
                device, port = targets.get(target_of(a.key), (None, None))
                event = Event(
                    node=node,
                    device=device,
                    port=port,
                    kind=str(a.kind),
                    severity=str(a.severity),
                    key=a.key,
                    message=a.message,
                    reason=a.reason,
                    opened_at=at,
                    updated_at=at,
                    clean_polls=0,
                    details=dict(a.details),
                )
                self.open[a.key] = event
                self._by_node.setdefault(_node_of(target_of(a.key)), {})[a.key] = event
                self.new.append(event)
                self.changes.append((event, OPENED))
                self.tally.opened += 1
                log.info("health: %s: %s", a.severity, a.message)
                continue
            event = self.open[a.key]
            if type(event) is StoredEvent:  # changed now: an Event, in the book as well
                event = self.open[a.key] = self._by_node[_node_of(target_of(a.key))][a.key] = event.as_event()
            event.clean_polls = a.clean_polls
            if a.op is Op.UPDATE:
                event.severity, event.message, event.details = str(a.severity), a.message, dict(a.details)
                event.reason = a.reason
                if a.previous_severity is not None:
                    event.reason = f"was {a.previous_severity}, now {a.severity}: {a.reason}"
                    self.changes.append((event, SEVERITY))
                    log.info("health: %s (was %s): %s", a.severity, a.previous_severity, a.message)
                event.updated_at = at
                self.tally.updated += 1
            elif a.op is Op.RESOLVE:
                event.resolved_at = event.updated_at = at
                event.reason = a.reason
                del self.open[a.key]
                del self._by_node[_node_of(target_of(a.key))][a.key]
                self.changes.append((event, RESOLVED))
                self.tally.resolved += 1
                log.info("health: resolved, %s: %s", a.reason, a.message)
            if event.pk is not None:  # a new one is inserted as it ends up
                (self.counted if a.op is Op.QUIET else self.dirty)[event.pk] = event

    def write(self) -> None:
        if self.new:
            Event.objects.bulk_create(self.new)
        if self.dirty:
            update_rows(Event, self.dirty.values(), CHANGED_FIELDS)
        counted = [e for pk, e in self.counted.items() if pk not in self.dirty]
        if counted:
            update_rows(Event, counted, ["clean_polls"])
        if self.changes:  # after the writes: every event has its primary key
            events_changed.send(sender=EventBook, changes=self.changes)
            self.changes = []


def with_open(nodes: dict[int, Node], kind: str) -> dict[int, Node]:
    """`nodes` (id -> row), and every other node with an open event of `kind`: a finding judged fabric-wide
    (not per snapshot) resolves on a node only if that node is judged again."""
    open_on = set(Event.objects.filter(kind=kind, resolved_at__isnull=True).values_list("node", flat=True))
    return {**nodes, **{n.pk: n for n in Node.objects.filter(pk__in=open_on - set(nodes))}}
