"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py, fabricweb/telemetry/signals.py;
through them fabricweb/telemetry/handed.py, fabricweb/telemetry/storage/apply.py,
fabricweb/telemetry/storage/budget.py, fabricweb/telemetry/storage/store.py.

The hook through which ingest hands each poll to the health rules (signals.snapshots_ingested)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection

from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from fabricweb.telemetry.signals import snapshots_ingested
from tests.telemetry.telemetry_support import later, snapshot


@pytest.fixture
def received():
    calls = []

    def receiver(sender, results, **kwargs):
        calls.append(
            {
                "results": results,
                "in_transaction": connection.in_atomic_block,
                "ports_stored": Port.objects.count(),
                "samples_stored": len(list(samples.between())),
            }
        )

    snapshots_ingested.connect(receiver)
    yield calls
    snapshots_ingested.disconnect(receiver)


def test_receivers_get_every_port_with_its_deltas_inside_the_transaction(each_db, received):
    s0 = snapshot()
    ingest_snapshot(s0)
    ingest_snapshot(later(s0, 10, {"symbol_error": 3}, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"}))

    first, second = received
    assert first["in_transaction"] and first["ports_stored"] == 4 and first["samples_stored"] == 4
    (result,) = second["results"]
    obs = {str(o.port): o for o in result.observations}
    assert set(obs) == {"cn001 hfi1_0/1", "cn001 mlx4_0/1", "cn001 mlx4_0/2", "cn001 mlx5_0/1"}
    hfi = obs["cn001 hfi1_0/1"]
    assert (hfi.previous.speed, hfi.current.speed) == ("EDR", "QDR")
    assert hfi.deltas["symbol_error"] == 3 and hfi.interval_s == 10.0
    assert hfi.port.best_speed == "EDR"  # the row as just updated
    assert hfi.port.device.hca_type is None and hfi.port.device.node.name == "cn001"  # attached: no query
    assert all(o.first_poll for o in first["results"][0].observations)


def test_duplicates_and_stale_snapshots_are_not_handed_on(each_db, received):
    s0 = snapshot()
    ingest_snapshot(later(s0, 10))
    ingest_snapshot(later(s0, 10))
    ingest_snapshot(s0)
    assert len(received) == 1


def test_a_receiver_that_fails_rolls_the_snapshot_back(each_db):
    def broken(sender, results, **kwargs):
        raise DatabaseError("the events table is gone")

    snapshots_ingested.connect(broken)
    try:
        with pytest.raises(DatabaseError):
            ingest_snapshot(snapshot())
    finally:
        snapshots_ingested.disconnect(broken)
    assert not Node.objects.exists() and not list(samples.between())


def test_one_snapshot_failing_in_the_database_does_not_hold_back_the_batch(each_db):
    def fails_for_cn666(sender, results, **kwargs):
        if any(r.node == "cn666" for r in results):
            raise DatabaseError("cn666 cannot be stored")

    snapshots_ingested.connect(fails_for_cn666)
    try:
        with pytest.raises(DatabaseError, match="cn666"):
            ingest_batch([snapshot(host="cn001"), snapshot(host="cn666"), snapshot(host="cn002")])
    finally:
        snapshots_ingested.disconnect(fails_for_cn666)
    assert sorted(Node.objects.values_list("name", flat=True)) == ["cn001", "cn002"]
