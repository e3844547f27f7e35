"""Celery tasks of the telemetry app: rollups and prune, on the `ingest` queue (fabricweb/names.py: QUEUE_OF).

Snapshots are not stored by a task: `manage.py ingest` reads them from the `snapshots` queue in
batches (intake/consumer.py).
"""

from __future__ import annotations

from celery import shared_task

from fabricweb.names import PRUNE, ROLLUP

from .history import retention, rollup


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
