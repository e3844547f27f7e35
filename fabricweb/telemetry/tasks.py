"""Celery tasks of the telemetry app.

The ingest tasks are routed to the `snapshots` queue, which `manage.py ingest` reads in
batches (consumer.py) without running these functions; they stay registered so that a
message on the `ingest` queue (an older agent) is still stored by the Celery worker.
Rollups and prune run on the `ingest` queue (fabricweb/names.py: QUEUE_OF).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from fabricweb.names import INGEST_SNAPSHOT, INGEST_SNAPSHOTS, PRUNE, ROLLUP

from . import ingest, retention, rollup
from .auth import NotAuthenticated, authenticated, check_unsigned
from .results import REFUSED, STALE, STORED

log = logging.getLogger(__name__)

# SQLite's "database is locked" and a dropped PostgreSQL connection are worth another try;
# ingest is idempotent, so a retried snapshot that did land is a harmless duplicate.
_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": True, "max_retries": 5}


def log_result(result) -> None:
    if result.status == STALE:
        log.warning("ingest: %s (older than the last applied snapshot of the node)", result.summary())
    elif result.status == REFUSED:
        log.warning("ingest: %s", result.summary())
    elif result.status == STORED and (result.new_node or result.vanished or result.clock_backwards):
        log.info("ingest: %s%s", result.summary(), " (new node)" if result.new_node else "")
    else:
        log.debug("ingest: %s", result.summary())


@shared_task(name=INGEST_SNAPSHOT, **_RETRY)
def ingest_snapshot(snapshot: dict | str, node: str | None = None, signature: str | None = None) -> dict:
    """Store one node snapshot (collectors.snapshot.to_dict) in one transaction; a signed one (JSON text,
    node, signature: fabricweb/nodeauth.py) only when it was signed with that node's key."""
    try:
        if signature is not None:
            snapshot = authenticated({"snapshot": snapshot, "node": node, "signature": signature})
        else:
            check_unsigned()
    except NotAuthenticated as e:
        log.warning("ingest: refused a snapshot: %s", e)
        return {"status": "unauthenticated", "reason": str(e)}
    try:
        result = ingest.ingest_snapshot(snapshot)
    except ingest.SnapshotRejected as e:
        log.warning("ingest: %s", e)
        return {"status": "rejected", "reason": e.reason}
    log_result(result)
    return {"status": result.status, "node": result.node, "samples": result.samples_written}


@shared_task(name=INGEST_SNAPSHOTS, **_RETRY)
def ingest_snapshots(snapshots: list) -> dict:
    """Store many snapshots in one transaction: for relays or backfills that hold a batch at once.
    Unsigned: refused when FABRIC_NODE_AUTH is required."""
    try:
        check_unsigned()
    except NotAuthenticated as e:
        log.warning("ingest: refused a batch of %d snapshots: %s", len(snapshots), e)
        return {"status": "unauthenticated", "reason": str(e)}
    batch = ingest.ingest_batch(snapshots)
    for rejection in batch.rejected:
        log.warning("ingest: batch item %d: %s", rejection.index, rejection.error)
    for result in batch.results:
        log_result(result)
    return {"stored": len(batch.results), "rejected": len(batch.rejected), "samples": batch.samples_written}


@shared_task(name=ROLLUP, soft_time_limit=600, time_limit=900)
def rollup_samples() -> dict:
    """Roll raw samples into 5-minute and hourly buckets. Schedule every 5 minutes."""
    written = rollup.rollup()
    return {str(period): n for period, n in written.items()}


@shared_task(name=PRUNE, soft_time_limit=1800, time_limit=2400)
def prune_old() -> dict:
    """Roll up what is due, then delete what is past retention. Schedule hourly."""
    rollup.rollup()
    return retention.prune()
