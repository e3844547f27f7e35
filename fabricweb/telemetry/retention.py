"""Retention: raw samples are kept FABRIC_RETAIN_RAW (48 h), 5-minute rollups FABRIC_RETAIN_5MIN
(30 days), hourly rollups FABRIC_RETAIN_1H (1 year)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from .models import PortRollup, PortSample

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR


def prune(now: datetime | None = None) -> dict[str, int]:
    """Delete raw samples and rollups past their retention (FABRIC_RETAIN_*); return rows deleted per kind."""
    now = now or timezone.now()
    raw = _delete_before(PortSample.objects.all(), "ts", now - timedelta(seconds=settings.FABRIC_RETAIN_RAW))
    five = _delete_before(
        PortRollup.objects.filter(period_s=FIVE), "bucket", now - timedelta(seconds=settings.FABRIC_RETAIN_5MIN)
    )
    hour = _delete_before(
        PortRollup.objects.filter(period_s=HOUR), "bucket", now - timedelta(seconds=settings.FABRIC_RETAIN_1H)
    )
    return {"samples": raw, "rollups_5min": five, "rollups_1h": hour}


def _delete_before(qs, time_field: str, cutoff: datetime, chunk: timedelta = timedelta(hours=1)) -> int:
    """Delete in one-hour slices, each its own statement, so writers are never blocked for long."""
    first = qs.filter(**{f"{time_field}__lt": cutoff}).aggregate(first=Min(time_field))["first"]
    deleted = 0
    while first is not None and first < cutoff:
        upto = min(first + chunk, cutoff)
        n, _ = qs.filter(**{f"{time_field}__lt": upto}).delete()
        deleted += n
        first = upto
    return deleted
