"""Covers fabricweb/health/records/events.py, fabricweb/health/rules/findings.py,
fabricweb/health/records/lifecycle.py; through them fabricweb/health/signals.py.

EventBook.open_for: the open events about a snapshot's targets, found among its node's alone. Open events are
loaded as StoredEvents and become Events when an action changes them; a quiet poll writes its count alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.health.models import Event
from fabricweb.health.records.events import EventBook, StoredEvent
from fabricweb.health.records.lifecycle import Action, Op
from fabricweb.health.rules.findings import Severity
from fabricweb.inventory.models import Node

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def event(key: str) -> Event:
    return Event(key=key, kind=key.partition(":")[0], severity="warning", message=key, opened_at=T0, updated_at=T0)


def targets(*names: str) -> dict:
    return dict.fromkeys(names, (None, None))


def test_it_finds_the_events_of_the_snapshots_targets_and_no_other_nodes():
    book = EventBook(
        [event("down:cn001/mlx5_0/1"), event("down:cn0010/mlx5_0/1"), event("pcie:cn001/mlx5_0"), event("stale:cn002")]
    )
    assert set(book.open_for(targets("cn001", "cn001/mlx5_0", "cn001/mlx5_0/1"))) == {
        "down:cn001/mlx5_0/1",
        "pcie:cn001/mlx5_0",
    }
    assert set(book.open_for(targets("cn002"))) == {"stale:cn002"}
    assert set(book.open_for(targets("cn001/mlx5_0/2"))) == set()
    # Targets of two nodes (no caller does this today): every event about one of them.
    assert set(book.open_for(targets("cn002", "cn0010/mlx5_0/1"))) == {"stale:cn002", "down:cn0010/mlx5_0/1"}


def test_events_opened_and_resolved_through_the_book_are_found_and_forgotten():
    book = EventBook([event("down:cn001/mlx5_0/1")])
    node = Node(name="cn001", first_seen_at=T0)
    opened = Action(Op.OPEN, "flapping:cn001/mlx5_0/1", "flapping", Severity.WARNING, "flaps", 0)
    book.apply([opened], node, targets("cn001/mlx5_0/1"), T0)
    assert set(book.open_for(targets("cn001/mlx5_0/1"))) == {"down:cn001/mlx5_0/1", "flapping:cn001/mlx5_0/1"}
    resolved = Action(Op.RESOLVE, "down:cn001/mlx5_0/1", "down", Severity.WARNING, "down", 3)
    book.apply([resolved], node, targets("cn001/mlx5_0/1"), T0)
    assert set(book.open_for(targets("cn001/mlx5_0/1"))) == {"flapping:cn001/mlx5_0/1"}


def test_it_loads_the_open_events_of_the_batchs_nodes_alone(each_db):
    nodes = [Node.objects.create(name=f"cn{i:03d}", first_seen_at=T0) for i in range(1, 5)]

    def stored(node: Node, key: str, resolved: bool = False) -> Event:
        e = event(key)
        e.node, e.details = node, {"seen": node.name}
        e.resolved_at = T0 if resolved else None
        e.save()
        return e

    wanted = stored(nodes[0], "down:cn001/mlx5_0/1")
    stored(nodes[0], "flap:cn001/mlx5_0/1", resolved=True)
    skew = stored(nodes[2], "clock_skew:cn003")
    stored(nodes[3], "stale:cn004")

    book = EventBook.for_nodes([nodes[0].pk, nodes[1].pk, nodes[2].pk])
    assert set(book.open) == {"down:cn001/mlx5_0/1", "clock_skew:cn003"}
    assert book.open["down:cn001/mlx5_0/1"].pk == wanted.pk
    assert book.open["clock_skew:cn003"].details == {"seen": "cn003"}  # JSON read back as the model reads it
    assert set(EventBook.for_nodes([nodes[2].pk], kind="clock_skew").open) == {skew.key}
    assert EventBook.for_nodes([nodes[2].pk], kind="down").open == {}
    assert EventBook.for_nodes([]).open == {}


def _node_with_open_events(n: int) -> tuple[Node, list[Event]]:
    node = Node.objects.create(name="cn001", first_seen_at=T0)
    events = []
    for i in range(n):
        e = event(f"degraded:cn001/mlx5_{i}/1")
        e.node, e.details, e.clean_polls = node, {"expected": "4X NDR"}, 1
        e.save()
        events.append(e)
    return node, events


def test_a_quiet_poll_of_many_open_events_reads_them_in_one_query_and_writes_their_counts_alone(each_db):
    node, events = _node_with_open_events(12)
    with CaptureQueriesContext(connection) as queries:
        book = EventBook.for_nodes([node.pk])
        quiet = [Action(Op.QUIET, e.key, e.kind, Severity.WARNING, e.message, 2, e.details) for e in events]
        book.apply(quiet, node, {}, T0 + timedelta(seconds=10))
        book.write()
    reads = [q["sql"] for q in queries.captured_queries if "SELECT" in q["sql"].upper()]
    assert len(reads) == 1  # the load: no query per event for a date it left unread
    for e in Event.objects.filter(pk__in=[e.pk for e in events]):
        assert e.clean_polls == 2
        assert e.updated_at == T0  # a quiet poll changes nothing else of it
        assert e.resolved_at is None


def test_an_event_an_action_changes_becomes_an_event_and_is_written_whole(each_db):
    node, (kept, updated, resolved) = _node_with_open_events(3)
    book = EventBook.for_nodes([node.pk])
    assert {type(e) for e in book.open.values()} == {StoredEvent}
    at = T0 + timedelta(seconds=10)
    actions = [
        Action(Op.UPDATE, updated.key, "degraded", Severity.CRITICAL, "now down to 1X", 0, {"expected": "4X NDR"},
               "now down to 1X", Severity.WARNING),
        Action(Op.RESOLVE, resolved.key, "degraded", Severity.WARNING, resolved.message, 3, {}, "clear for 3 polls"),
    ]  # fmt: skip
    book.apply(actions, node, {}, at)
    assert type(book.open[updated.key]) is Event and type(book.open[kept.key]) is StoredEvent
    assert resolved.key not in book.open
    assert [(e.pk, change) for e, change in book.changes] == [(updated.pk, "severity"), (resolved.pk, "resolved")]
    book.write()
    after = {e.pk: e for e in Event.objects.filter(node=node)}
    assert (after[updated.pk].severity, after[updated.pk].message, after[updated.pk].updated_at) == (
        "critical",
        "now down to 1X",
        at,
    )
    assert after[updated.pk].reason == "was warning, now critical: now down to 1X"
    assert after[updated.pk].opened_at == T0  # left as it was: never read
    assert (after[resolved.pk].resolved_at, after[resolved.pk].reason) == (at, "clear for 3 polls")
    assert (after[kept.pk].updated_at, after[kept.pk].clean_polls, after[kept.pk].details) == (
        T0,
        1,
        {"expected": "4X NDR"},
    )
