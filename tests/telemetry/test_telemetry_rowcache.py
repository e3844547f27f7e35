"""Covers fabricweb/health/records/actions.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/intake/spend.py, fabricweb/telemetry/signals.py, fabricweb/telemetry/storage/rowcache.py.

Ingest reuses a node's rows between batches only while nobody else wrote them (telemetry/storage/rowcache.py).

These tests commit for real (transaction=True): the cache keeps rows once a batch's block ended well, committed
or released to an enclosing transaction, and an enclosing transaction that rolls back takes the token back.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from fabricweb.health.records.actions import accept_baseline, undo_baseline
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.intake.spend import NodeSpend, OverBudget
from fabricweb.telemetry.signals import snapshots_ingested
from fabricweb.telemetry.storage import rowcache
from tests.telemetry.telemetry_support import PROCFS, T0, later, snapshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_cache")]
STEP = {"port_xmit_data": 4000, "symbol_error": 0}


def xmit_deltas() -> list[int | None]:
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    return [s.xmit_bytes for s in samples.of_port(port)]


def test_it_reuses_the_rows_it_wrote_and_computes_the_same_deltas(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    assert len(fresh_cache) == 1
    second = later(first, 10, STEP)
    ingest_snapshot(second)
    ingest_snapshot(later(second, 10, STEP))
    assert (fresh_cache.hits, fresh_cache.misses) == (2, 1)
    assert xmit_deltas() == [None, 4000, 4000]
    token = Node.objects.get(name="cn001").ingest_token
    assert token is not None and fresh_cache.take("cn001", Node.objects.get(name="cn001").pk, token) is not None


def test_another_ingest_process_writing_the_node_makes_it_read_the_rows_again(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    held = fresh_cache.take("cn001", Node.objects.get(name="cn001").pk, Node.objects.get(name="cn001").ingest_token)
    # Another process (its own cache, here none) stores the next snapshot; this one still holds the old rows.
    second = later(first, 10, STEP)
    ingest_snapshot(second)
    fresh_cache.drop()
    fresh_cache.keep([held])
    ingest_snapshot(later(second, 10, {"port_xmit_data": 1000}))
    assert fresh_cache.misses >= 2
    # With the old rows it would have counted the second poll's traffic twice (5000).
    assert xmit_deltas() == [None, 4000, 1000]


def test_an_edit_outside_ingest_is_seen_at_the_next_snapshot(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    port = Port.objects.select_related("device__node").get(device__node__name="cn001", device__name="mlx5_0", number=1)
    port.best_speed, port.best_lanes = "HDR", 4
    port.save(update_fields=["best_speed", "best_lanes"])  # e.g. the admin
    assert Node.objects.get(name="cn001").ingest_token is None
    ingest_snapshot(later(first, 10, STEP))
    assert fresh_cache.misses == 2 and fresh_cache.hits == 0
    port.refresh_from_db()
    assert (port.best_speed, port.best_lanes) == ("HDR", 4)  # not written back from memory


def test_accepting_a_baseline_clears_the_token(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    accept_baseline(Node.objects.get(name="cn001"))
    assert Node.objects.get(name="cn001").ingest_token is None
    ingest_snapshot(later(first, 10, STEP))
    assert fresh_cache.hits == 0


def test_a_rolled_back_batch_leaves_nothing_of_itself_in_memory(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    second = later(first, 10, STEP)

    def fail(sender, **kwargs):
        raise DatabaseError("the database went away")

    snapshots_ingested.connect(fail, dispatch_uid="test-rowcache-fail")
    try:
        with pytest.raises(DatabaseError):
            ingest_snapshot(second)
    finally:
        snapshots_ingested.disconnect(dispatch_uid="test-rowcache-fail")
    assert len(fresh_cache) == 0
    ingest_snapshot(second)  # redelivered: stored once, against the committed rows
    assert xmit_deltas() == [None, 4000]


def test_it_reuses_the_rows_between_batches_inside_an_enclosing_transaction(each_db, fresh_cache):
    with transaction.atomic():
        first = snapshot(PROCFS, at=T0)
        ingest_snapshot(first)
        second = later(first, 10, STEP)
        ingest_snapshot(second)
        ingest_snapshot(later(second, 10, STEP))
        assert (fresh_cache.hits, fresh_cache.misses) == (2, 1)
        assert xmit_deltas() == [None, 4000, 4000]


def test_rows_kept_in_an_enclosing_transaction_that_rolled_back_are_read_again(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    second = later(first, 10, STEP)
    with pytest.raises(RuntimeError), transaction.atomic():
        ingest_snapshot(second)
        assert len(fresh_cache) == 1  # kept when its own block ended
        raise RuntimeError("the enclosing transaction fails after the batch")
    # The node's token went back with the rollback: the rows held (which had stored the second poll) are passed
    # over, and the second poll, redelivered, is stored against the committed rows, not taken as a duplicate.
    ingest_snapshot(second)
    assert (fresh_cache.hits, fresh_cache.misses) == (1, 2)
    assert xmit_deltas() == [None, 4000]


def test_it_keeps_at_most_its_limit_of_nodes(each_db):
    cache = rowcache.RowCache(limit=2)
    for name in ("cn001", "cn002", "cn003"):
        ingest_snapshot(snapshot(PROCFS, host=name, at=T0))
    cache.keep(
        [
            rowcache.CACHE.take(n, Node.objects.get(name=n).pk, Node.objects.get(name=n).ingest_token)
            for n in ("cn001", "cn002", "cn003")
        ]
    )
    assert len(cache) == 2
    assert cache.take("cn001", 0, 0) is None  # the oldest went first


def test_undoing_a_baseline_is_not_undone_by_the_next_poll(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    port = Port.objects.select_related("device__node").get(device__node__name="cn001", device__name="mlx5_0", number=1)
    port.best_speed, port.best_lanes = "EDR", 4  # it trained at 4X EDR once; it runs at 1X now
    port.save(update_fields=["best_speed", "best_lanes"])
    second = later(first, 10, STEP)
    ingest_snapshot(second)  # this process now holds the node's rows, 4X best
    accept_baseline(port)  # 1X accepted as what it should run at
    third = later(second, 10, STEP)
    ingest_snapshot(third)  # ... and holds the rows again, 1X best
    port.refresh_from_db()
    assert (port.best_speed, port.best_lanes) == ("EDR", 1)

    undo_baseline(port)
    ingest_snapshot(later(third, 10, STEP))
    port.refresh_from_db()
    # Judged against 4X again: with the rows it held (1X best, 1X expected) it would judge the port sound and
    # write that back whenever the port's row next changed.
    assert (port.best_speed, port.best_lanes) == ("EDR", 4)
    assert port.expected_lanes == 4 and port.degraded
    assert fresh_cache.misses == 4  # the first poll, and after each write outside ingest: the edit, accept, undo


def test_a_nodes_refusal_history_survives_its_next_stored_poll(each_db, fresh_cache):
    """The consumer counts a flooding node's refused messages on its row (intake/spend.py) while ingest holds the
    node's row in memory: the next poll it stores clears the reason and keeps the count and the time."""
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    spend = NodeSpend(1)
    with pytest.raises(OverBudget):
        spend.admit("cn001", 100)
    spend.write()
    refused = Node.objects.get(name="cn001")
    assert refused.refused_snapshots == 1 and refused.refused_reason.startswith("sent more than its 1 bytes")

    ingest_snapshot(later(first, 10, STEP))
    node = Node.objects.get(name="cn001")
    assert (node.refused_snapshots, node.refused_at, node.refused_reason) == (1, refused.refused_at, "")
