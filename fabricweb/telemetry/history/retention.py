"""Retention: raw samples are kept FABRIC_RETAIN_RAW (48 h), 5-minute rollups FABRIC_RETAIN_5MIN
(30 days), hourly rollups FABRIC_RETAIN_1H (1 year).

Each goes a whole span at a time (storage/partitions.py), once the span's end is past retention:
raw samples by UTC hour, 5-minute rollups by UTC day, hourly rollups by UTC month. On
PostgreSQL the span's partition is dropped; on SQLite its rows are deleted in one statement.
So a sample is kept between FABRIC_RETAIN_RAW and an hour more, a 5-minute rollup up to a
day more, an hourly rollup up to a month more.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Min, QuerySet
from django.utils import timezone

from ..models import NodePoll, PortRollup
from ..storage import partitions

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR


def prune(now: datetime | None = None) -> dict[str, int]:
    """Drop what is past retention (FABRIC_RETAIN_*); return the spans dropped: hours of raw samples,
    days of 5-minute rollups, months of hourly rollups."""
    now = now or timezone.now()

    def cutoff(setting: str) -> datetime:
        return now - timedelta(seconds=getattr(settings, setting))

    return {
        "sample_hours": _drop(partitions.SAMPLES, NodePoll.objects.all(), "ts", cutoff("FABRIC_RETAIN_RAW")),
        "rollup_5min_days": _drop(
            partitions.ROLLUPS_5MIN, PortRollup.objects.filter(period_s=FIVE), "bucket", cutoff("FABRIC_RETAIN_5MIN")
        ),
        "rollup_1h_months": _drop(
            partitions.ROLLUPS_1H, PortRollup.objects.filter(period_s=HOUR), "bucket", cutoff("FABRIC_RETAIN_1H")
        ),
    }


def _drop(table: partitions.Partitioned, rows: QuerySet, field: str, cutoff: datetime) -> int:
    """Spans of `table` ended by `cutoff` dropped: whole partitions, or (SQLite) a span's rows per statement."""
    if partitions.partitioned():
        return table.drop_before(cutoff)
    spans = 0
    while (first := rows.filter(**{f"{field}__lt": cutoff}).aggregate(first=Min(field))["first"]) is not None:
        end = table.after(table.floor(first))
        if end > cutoff:
            break
        rows.filter(**{f"{field}__lt": end}).delete()
        spans += 1
    return spans
