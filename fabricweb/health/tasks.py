"""Celery tasks of the health app, on the `ingest` queue (fabricweb/names.py: QUEUE_OF)."""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from django.db import OperationalError

from fabricweb.names import CHECK_STALE, RETIRE_VANISHED

from .records import retire, staleness

log = logging.getLogger(__name__)


# Schedule once per poll interval. A run that finds SQLite locked or loses its connection is
# retried; a late run only reports a stale node a little later.
@shared_task(bind=True, name=CHECK_STALE, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def check_stale(self) -> dict:
    """Open or update the stale event of every node that has missed `stale_after_polls` polls it was sent.

    The ledger's counts are checked against the queues: a node that took its poll since the last
    dispatch is answering again, whatever the count still says until the next dispatch.
    """
    from fabricweb.scheduling import broker_redis, missed_polls

    try:
        missed = missed_polls(broker_redis(self.app.conf.broker_url))
    except redis.RedisError as e:  # no broker: nothing was dispatched that could be missed
        log.warning("health: cannot read the poll ledger (%s); staleness not judged", e)
        return {"skipped": "no broker"}
    report = staleness.check_stale(missed)
    if report.opened:
        log.warning("health: stale nodes: %s", ", ".join(report.stale))
    return {"stale": report.stale, "opened": report.opened, "updated": report.updated}


@shared_task(
    name=RETIRE_VANISHED,
    soft_time_limit=600,
    time_limit=900,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
)
def retire_vanished() -> dict:
    """Resolve the events of devices and ports vanished FABRIC_VANISHED_RETIRE_AFTER ago, and delete them. Hourly."""
    report = retire.retire_vanished()
    return {"devices": report.devices, "ports": report.ports, "resolved": report.resolved}
