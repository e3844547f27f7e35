"""Covers fabricweb/health/records/context.py, fabricweb/health/engine/engine.py,
fabricweb/telemetry/history/samples.py; through them fabricweb/health/records/eventbudget.py,
fabricweb/health/engine/pciehost.py.

Snapshots that arrive together (a relay's batch, a backfill) are judged as if they had come one by one."""

from __future__ import annotations

from fabricweb.health.models import Event
from fabricweb.health.records import context
from fabricweb.inventory.models import Node
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from tests.health_db.health_db_fabric import SimFabric

SCRIPT = {  # poll -> faults added (+) or removed (-)
    2: ("+cn001/mlx5_0/1:down", "+cn002/mlx4_0/2:vanish"),
    5: ("-cn001/mlx5_0/1:down", "-cn002/mlx4_0/2:vanish", "+cn001/mlx5_1/1:width=2X"),
    8: ("-cn001/mlx5_1/1:width",),
}


def record(sim_dir) -> list[tuple]:
    fab = SimFabric(sim_dir, 2)
    polls = []
    for i in range(12):
        for spec in SCRIPT.get(i, ()):
            (fab.fault if spec[0] == "+" else fab.clear)(spec[1:])
        fab.sim.step(10.0)
        polls.append((fab.now, [fab.snapshot(n) for n in fab.nodes]))
    return polls


def events() -> list[tuple]:
    return sorted(
        Event.objects.values_list("key", "severity", "message", "opened_at", "updated_at", "resolved_at", "clean_polls")
    )


def test_a_batch_of_many_polls_opens_and_resolves_the_same_events_as_the_polls_one_by_one(each_db, sim_dir, outcomes):
    polls = record(sim_dir)
    for now, snaps in polls:
        for snap in snaps:
            ingest_snapshot(snap, now=now)
    one_by_one = events()
    assert {e[0] for e in one_by_one} >= {"down:cn001/mlx5_0/1", "vanished:cn002/mlx4_0/2", "degraded:cn001/mlx5_1/1"}

    Node.objects.all().delete()
    context.forget()
    ingest_batch([snap for _, snaps in polls for snap in snaps], now=polls[-1][0])
    assert outcomes[-1].snapshots == 24
    assert events() == one_by_one


def test_a_failure_in_judging_never_costs_the_samples(each_db, sim_dir, monkeypatch, caplog):
    from fabricweb.health.engine import engine as health_engine
    from fabricweb.telemetry.history import samples

    def broken(view, t):
        raise RuntimeError("a bug in a rule")

    monkeypatch.setattr(health_engine, "judge_port", broken)
    fab = SimFabric(sim_dir, 2)
    fab.poll()
    assert len(list(samples.between())) == 4  # stored, only not judged
    assert not Event.objects.exists()
    assert "health: judging 1 snapshot(s) failed; they are stored but not judged" in caplog.text
