"""Covers fabricweb/health/records/context.py, fabricweb/health/engine/memo.py.

Quiet ports judged without a view (health/engine/memo.py) open, update and resolve exactly what the full rules do."""

from __future__ import annotations

from fabricweb.health.engine import memo
from fabricweb.health.models import Event
from fabricweb.health.records import context
from fabricweb.inventory.models import Node
from fabricweb.telemetry.ingest import ingest_batch
from tests.health_db.health_db_fabric import SimFabric

SCRIPT = {  # poll -> faults added (+) or removed (-)
    1: ("+cn005/mlx5_0/1:saturate",),  # 10% of its first 10 s lost: congested at once, then its 32-bit counter caps
    3: ("+cn001/mlx5_0/1:down", "+cn003/mlx5_0/1:symbol-errors=2"),
    6: ("-cn001/mlx5_0/1:down", "-cn005/mlx5_0/1:saturate"),
    8: ("-cn003/mlx5_0/1:symbol-errors",),
}


def record(sim_dir) -> list[tuple]:
    fab = SimFabric(sim_dir, 6)
    polls = []
    for i in range(18):
        for spec in SCRIPT.get(i, ()):
            (fab.fault if spec[0] == "+" else fab.clear)(spec[1:])
        fab.sim.step(10.0)
        polls.append((fab.now, [fab.snapshot(n) for n in fab.nodes]))
    return polls


def ingest(polls, full: bool, outcomes: list) -> tuple[list[tuple], int, int]:
    """Every poll in one batch; `full`: with no judgement kept from the poll before, so none is reused.
    The events stored, how many port-polls were judged, and how many of those without a view (memo.reuse)."""
    first = len(outcomes)
    for now, snaps in polls:
        if full:
            memo.HELD.forget()
        assert not ingest_batch(snaps, now=now).rejected
    judged = outcomes[first:]
    events = sorted(
        Event.objects.values_list(
            "key", "severity", "message", "reason", "details", "opened_at", "updated_at", "resolved_at", "clean_polls"
        )
    )
    return events, sum(o.ports for o in judged), sum(o.fast for o in judged)


def test_quiet_ports_judged_without_a_view_come_to_the_same_events_as_the_full_rules(each_db, sim_dir, outcomes):
    polls = record(sim_dir)
    memo.HELD.forget()
    fast, ports, without_view = ingest(polls, False, outcomes)
    assert without_view > ports // 2  # most port-polls went the fast way (the rest: first polls, faults)
    assert {e[0] for e in fast} >= {"down:cn001/mlx5_0/1", "symbol_errors:cn003/mlx5_0/1", "congestion:cn005/mlx5_0/1"}

    Node.objects.all().delete()
    context.forget()
    full, full_ports, full_without_view = ingest(polls, True, outcomes)
    assert (full, full_ports) == (fast, ports)
    assert full_without_view == 0
