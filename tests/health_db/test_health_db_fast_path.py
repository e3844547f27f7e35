"""Quiet ports judged without a view (health/memo.py) open, update and resolve exactly what the full rules do."""

from __future__ import annotations

from health_db_fabric import SimFabric

from fabricweb.health import context, engine, memo
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from fabricweb.telemetry.ingest import ingest_batch

SCRIPT = {  # poll -> faults added (+) or removed (-)
    2: ("+cn005/mlx5_0/1:saturate",),  # congested at once, then its 32-bit counter caps
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


def ingest(polls, full: bool) -> tuple[list[tuple], int]:
    """Every poll in one batch; `full`: with no judgement kept from the poll before, so none is reused.
    The events stored, and how many port-polls were judged."""
    ports = 0
    for now, snaps in polls:
        if full:
            memo._HELD.clear()
        assert not ingest_batch(snaps, now=now).rejected
        ports += engine.LAST.ports
    return sorted(
        Event.objects.values_list(
            "key", "severity", "message", "reason", "details", "opened_at", "updated_at", "resolved_at", "clean_polls"
        )
    ), ports


def test_quiet_ports_judged_without_a_view_come_to_the_same_events_as_the_full_rules(each_db, sim_dir):
    polls = record(sim_dir)
    memo._HELD.clear()
    before = engine.fast_hits
    fast, ports = ingest(polls, full=False)
    assert engine.fast_hits - before > ports // 2  # most port-polls went the fast way (the rest: first polls, faults)
    assert {e[0] for e in fast} >= {"down:cn001/mlx5_0/1", "symbol_errors:cn003/mlx5_0/1", "congestion:cn005/mlx5_0/1"}

    Node.objects.all().delete()
    context.forget()
    before = engine.fast_hits
    assert ingest(polls, full=True) == (fast, ports)
    assert engine.fast_hits == before
