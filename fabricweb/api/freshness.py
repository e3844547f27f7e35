"""When a node's data is stale: no snapshot stored for a few poll intervals (server clock)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from fabricweb.health import context


def stale_after() -> timedelta:
    # The health rules' own threshold (FABRIC_THRESHOLDS), so the API, /healthz and the stale events agree.
    return timedelta(seconds=context.thresholds().stale_after_polls * settings.FABRIC_POLL_INTERVAL)


def is_stale(last_ingested_at: datetime | None, now: datetime, after: timedelta | None = None) -> bool:
    """`after`: stale_after(), given by a caller that judges thousands of nodes at once."""
    return last_ingested_at is None or now - last_ingested_at > (stale_after() if after is None else after)
