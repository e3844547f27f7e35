"""How old the newest data may be before a page's banner and /healthz say so (server clock).

This is the central side's freshness: nothing stored for a few poll intervals means ingest,
beat or the whole fabric has stopped. It never judges one node: a node is stale only once it
has missed the polls it was sent (Node.stale, fabricweb/health/records/staleness.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from . import context


def stale_after() -> timedelta:
    # The health rules' own threshold (FABRIC_THRESHOLDS): the banners speak of the same three polls.
    return timedelta(seconds=context.thresholds().stale_after_polls * settings.FABRIC_POLL_INTERVAL)


def is_old(stored_at: datetime | None, now: datetime) -> bool:
    """Whether what was stored at `stored_at` (the newest ingest, the last sweep) is old at `now`."""
    return stored_at is None or now - stored_at > stale_after()
