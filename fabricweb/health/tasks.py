"""Celery tasks of the health app; routed to the `ingest` queue (fabricweb.celery)."""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from django.db import OperationalError

from . import staleness

log = logging.getLogger(__name__)


# Schedule once per poll interval. A run that finds SQLite locked or loses its connection is
# retried; a late run only reports a stale node a little later.
@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def check_stale() -> dict:
    """Open or update the stale event of every node that has missed `stale_after_polls` polls.

    Not while ingest is two polls or more behind (the database was away, the consumer stopped): the
    nodes' snapshots are then waiting on the broker, and every node would be paged as stale.
    """
    from fabricweb.inventory.models import Node
    from fabricweb.scheduling import snapshot_backlog

    try:
        backlog = snapshot_backlog()
    except (redis.RedisError, ValueError) as e:  # no broker (or not Redis): no backlog to wait for
        log.warning("health: cannot read the snapshot backlog (%s); judging staleness anyway", e)
        backlog = 0
    if backlog and backlog >= 2 * Node.objects.count():
        log.warning("health: ingest is %d snapshot(s) behind; staleness not judged until it catches up", backlog)
        return {"skipped": "ingest behind", "backlog": backlog}
    report = staleness.check_stale()
    if report.opened:
        log.warning("health: stale nodes: %s", ", ".join(report.stale))
    return {"stale": report.stale, "opened": report.opened, "updated": report.updated}
