"""Celery tasks of the health app; routed to the `ingest` queue (fabricweb.celery)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from . import staleness

log = logging.getLogger(__name__)


# Schedule once per poll interval. A run that finds SQLite locked or loses its connection is
# retried; a late run only reports a stale node a little later.
@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def check_stale() -> dict:
    """Open or update the stale event of every node that has missed `stale_after_polls` polls."""
    report = staleness.check_stale()
    if report.opened:
        log.warning("health: stale nodes: %s", ", ".join(report.stale))
    return {"stale": report.stale, "opened": report.opened, "updated": report.updated}
