"""Retention: raw samples are kept FABRIC_RETAIN_RAW (48 h), 5-minute rollups FABRIC_RETAIN_5MIN
(30 days), hourly rollups FABRIC_RETAIN_1H (1 year).

Raw samples go a whole UTC hour at a time, once the hour's end is past retention: on
PostgreSQL the hour's partition is dropped (partitions.py), on SQLite its rows are deleted
in one statement. So a sample is kept between FABRIC_RETAIN_RAW and an hour more.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from . import partitions
from .models import PortRollup, PortSample

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR


def prune(now: datetime | None = None) -> dict[str, int]:
    """Drop what is past retention (FABRIC_RETAIN_*); return hours of raw samples and rollup rows dropped."""
    now = now or timezone.now()
    hours = _drop_sample_hours(partitions.hour_of(now - timedelta(seconds=settings.FABRIC_RETAIN_RAW)))
    five = _delete_before(
        PortRollup.objects.filter(period_s=FIVE), "bucket", now - timedelta(seconds=settings.FABRIC_RETAIN_5MIN)
    )
    hour = _delete_before(
        PortRollup.objects.filter(period_s=HOUR), "bucket", now - timedelta(seconds=settings.FABRIC_RETAIN_1H)
    )
    return {"sample_hours": hours, "rollups_5min": five, "rollups_1h": hour}


def _drop_sample_hours(cutoff: datetime) -> int:
    """Hours of samples ended by `cutoff` dropped: whole partitions, or (SQLite) an hour's rows per statement."""
    if partitions.partitioned():
        return partitions.drop_before(cutoff)
    hours = 0
    samples = PortSample.objects.all()
    first = samples.filter(ts__lt=cutoff).aggregate(first=Min("ts"))["first"]
    while first is not None and first < cutoff:
        end = min(partitions.hour_of(first) + partitions.HOUR, cutoff)
        deleted, _ = samples.filter(ts__lt=end).delete()
        hours += deleted > 0
        first = samples.filter(ts__lt=cutoff).aggregate(first=Min("ts"))["first"]
    return hours


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
