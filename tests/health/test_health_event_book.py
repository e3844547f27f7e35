"""Covers fabricweb/health/records/events.py, fabricweb/health/rules/findings.py,
fabricweb/health/records/lifecycle.py; through them fabricweb/health/signals.py.

EventBook.open_for: the open events about a snapshot's targets, found among its node's alone."""

from __future__ import annotations

from datetime import UTC, datetime

from fabricweb.health.models import Event
from fabricweb.health.records.events import EventBook
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
