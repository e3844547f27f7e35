"""Rollups: raw samples summed into 5-minute buckets, 5-minute buckets into hours.

Each run recomputes the newest bucket already rolled (samples may arrive late, up to
the grace period) and every complete bucket after it, and upserts them, so a run can
be repeated or skipped without harm. Buckets are aligned to the period in UTC.
Stretches without data are jumped over, not walked: one snapshot dated years back
(a node whose clock was reset) costs one query, not a bucket per 5 minutes since.
Each bucket is committed as it is written, so a run cut short keeps its progress.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Case, Count, F, FloatField, Max, Min, Q, Sum, Value, When
from django.utils import timezone

from collectors.link import SPEEDS

from .columns import DELTA_COLUMNS
from .models import PortRollup, PortSample

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR
_RANK_TO_SPEED = {i: s.name for i, s in enumerate(SPEEDS)}
UPDATE_FIELDS = [
    "samples",
    *DELTA_COLUMNS,
    "max_rcv_bps",
    "max_xmit_bps",
    "worst_state_id",
    "min_speed",
    "min_lanes",
    "resets",
    "capped_samples",
]


def _floor(when: datetime, period: int) -> datetime:
    ts = int(when.timestamp())
    return datetime.fromtimestamp(ts - ts % period, UTC)


def _speed_rank(column: str) -> Case:
    return Case(*(When(**{column: s.name}, then=Value(i)) for i, s in enumerate(SPEEDS)), default=None)


def _bps(column: str) -> Case:
    # Rate of one poll; polls with no positive interval (first poll, clock step) have none.
    return Case(When(interval_s__gt=0, then=F(column) * 1.0 / F("interval_s")), default=None, output_field=FloatField())


def grace() -> timedelta:
    """How late a sample may arrive and still be counted in its bucket."""
    return timedelta(seconds=max(60.0, 2 * settings.FABRIC_POLL_INTERVAL))


def rollup(now: datetime | None = None) -> dict[int, int]:
    """Roll every complete bucket not yet rolled; return the number of rows written per period."""
    now = now or timezone.now()
    complete = _floor(now - grace(), FIVE)
    return {
        FIVE: _roll(FIVE, PortSample.objects.all(), "ts", _sample_aggregates(), complete),
        HOUR: _roll(
            HOUR,
            PortRollup.objects.filter(period_s=FIVE),
            "bucket",
            _rollup_aggregates(),
            _floor(complete, HOUR),
        ),
    }


# Annotation names must differ from field names, or F("rcv_bytes") would mean the sum.
def _sums() -> dict:
    return {f"sum_{c}": Sum(c) for c in DELTA_COLUMNS}


def _sample_aggregates() -> dict:
    sums = _sums()
    return {
        "samples": Count("id"),
        **sums,
        "max_rcv_bps": Max(_bps("rcv_bytes")),
        "max_xmit_bps": Max(_bps("xmit_bytes")),
        "worst_state_id": Min("state_id"),
        "speed_rank": Min(_speed_rank("speed")),
        "min_lanes": Min("lanes"),
        "resets": Count("id", filter=Q(reset=True)),
        "capped_samples": Count("id", filter=Q(capped=True)),
    }


def _rollup_aggregates() -> dict:
    sums = _sums()
    return {
        "samples": Sum("samples"),
        **sums,
        "max_rcv_bps": Max("max_rcv_bps"),
        "max_xmit_bps": Max("max_xmit_bps"),
        "worst_state_id": Min("worst_state_id"),
        "speed_rank": Min(_speed_rank("min_speed")),
        "min_lanes": Min("min_lanes"),
        "resets": Sum("resets"),
        "capped_samples": Sum("capped_samples"),
    }


def _roll(period: int, source, time_field: str, aggregates: dict, end: datetime) -> int:
    """Aggregate `source` rows per port into `period` buckets from the newest rolled one up to `end`."""
    last = PortRollup.objects.filter(period_s=period).aggregate(last=Max("bucket"))["last"]
    if last is None:
        first = source.aggregate(first=Min(time_field))["first"]
        if first is None:
            return 0
        last = _floor(first, period)
    written = 0
    step = timedelta(seconds=period)
    bucket = last
    while bucket + step <= end:
        rows = (
            source.filter(**{f"{time_field}__gte": bucket, f"{time_field}__lt": bucket + step})
            .values("port_id")
            .annotate(**aggregates)
            .order_by()
        )
        objs = []
        for row in rows:
            row["min_speed"] = _RANK_TO_SPEED.get(row.pop("speed_rank"))
            for c in DELTA_COLUMNS:
                row[c] = row.pop(f"sum_{c}")
            objs.append(PortRollup(period_s=period, bucket=bucket, **row))
        if objs:
            PortRollup.objects.bulk_create(
                objs,
                update_conflicts=True,
                unique_fields=["port", "period_s", "bucket"],
                update_fields=UPDATE_FIELDS,
            )
            written += len(objs)
            bucket += step
            continue
        following = source.filter(**{f"{time_field}__gte": bucket + step}).aggregate(t=Min(time_field))["t"]
        if following is None:
            break
        bucket = max(bucket + step, _floor(following, period))
    return written
