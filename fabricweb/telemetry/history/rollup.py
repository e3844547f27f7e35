"""Rollups: raw samples summed into 5-minute buckets (in Python: they are packed), 5-minute
buckets into hours (in SQL). Each bucket's rows go into its day's or month's partition on
PostgreSQL (storage/partitions.py), created here before they are written.

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
from django.db.models import Case, Max, Min, Sum, Value, When
from django.utils import timezone

from collectors.link import SPEED_RANK, SPEEDS
from fabricweb.inventory.models import Port

from ..models import NodePoll, PortRollup
from ..storage import partitions
from ..storage.columns import DELTA_COLUMNS
from . import samples

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


def grace() -> timedelta:
    """How late a sample may arrive and still be counted in its bucket."""
    return timedelta(seconds=max(60.0, 2 * settings.FABRIC_POLL_INTERVAL))


def rollup(now: datetime | None = None) -> dict[int, int]:
    """Roll every complete bucket not yet rolled; return the number of rows written per period."""
    now = now or timezone.now()
    complete = _floor(now - grace(), FIVE)
    return {
        FIVE: _roll(FIVE, NodePoll.objects.all(), "ts", _SampleSums().of, complete),
        HOUR: _roll(HOUR, PortRollup.objects.filter(period_s=FIVE), "bucket", _sum_rollups, _floor(complete, HOUR)),
    }


# Annotation names must differ from field names, or F("rcv_bytes") would mean the sum.
def _sums() -> dict:
    return {f"sum_{c}": Sum(c) for c in DELTA_COLUMNS}


_RCV, _XMIT = DELTA_COLUMNS.index("rcv_bytes"), DELTA_COLUMNS.index("xmit_bytes")


class _SampleSums:
    """The raw samples of a bucket summed per port, in Python: they are packed (storage/packing.py)."""

    def __init__(self) -> None:
        self.ports: set[int] = set()  # ports known to exist, looked up once per run

    def of(self, since: datetime, until: datetime) -> list[dict]:
        # Per port: samples, the delta sums, then max rcv and xmit rate, worst state, slowest speed rank,
        # narrowest width, resets, capped. Like SQL's SUM, MIN and MAX: unknown values are skipped, all
        # unknown is None.
        acc: dict[int, list] = {}
        for port_id, (interval, state, _, speed, lanes, reset, capped), deltas in samples.entries_between(since, until):
            a = acc.get(port_id)
            if a is None:
                a = acc[port_id] = [0, [None] * len(deltas), None, None, None, None, None, 0, 0]
            a[0] += 1
            sums = a[1]
            for i, value in enumerate(deltas):
                if value is not None:
                    total = sums[i]
                    sums[i] = value if total is None else total + value
            if interval is not None and interval > 0:  # rate of one poll
                if (rcv := deltas[_RCV]) is not None and (a[2] is None or rcv * 1.0 / interval > a[2]):
                    a[2] = rcv * 1.0 / interval
                if (xmit := deltas[_XMIT]) is not None and (a[3] is None or xmit * 1.0 / interval > a[3]):
                    a[3] = xmit * 1.0 / interval
            if state is not None and (a[4] is None or state < a[4]):
                a[4] = state
            if (rank := SPEED_RANK.get(speed)) is not None and (a[5] is None or rank < a[5]):
                a[5] = rank
            if lanes is not None and (a[6] is None or lanes < a[6]):
                a[6] = lanes
            a[7] += reset
            a[8] += capped
        # A port deleted since (admin) took its rollups with it but not its packed samples: none for it.
        unseen = acc.keys() - self.ports
        if unseen:
            self.ports.update(Port.objects.filter(pk__in=unseen).order_by().values_list("pk", flat=True))
        return [
            {
                "port_id": port_id,
                "samples": a[0],
                **dict(zip(DELTA_COLUMNS, a[1], strict=True)),
                "max_rcv_bps": a[2],
                "max_xmit_bps": a[3],
                "worst_state_id": a[4],
                "speed_rank": a[5],
                "min_lanes": a[6],
                "resets": a[7],
                "capped_samples": a[8],
            }
            for port_id, a in acc.items()
            if port_id in self.ports
        ]


def _sum_rollups(since: datetime, until: datetime) -> list[dict]:
    rows = (
        PortRollup.objects.filter(period_s=FIVE, bucket__gte=since, bucket__lt=until)
        .values("port_id")
        .annotate(**_rollup_aggregates())
        .order_by()
    )
    out = []
    for row in rows:
        for c in DELTA_COLUMNS:
            row[c] = row.pop(f"sum_{c}")
        out.append(row)
    return out


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


def _roll(period: int, source, time_field: str, summed, end: datetime) -> int:
    """Sum `source` rows per port (`summed(since, until)`) into `period` buckets from the newest rolled one to `end`."""
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
        objs = []
        for row in summed(bucket, bucket + step):
            row["min_speed"] = _RANK_TO_SPEED.get(row.pop("speed_rank"))
            objs.append(PortRollup(period_s=period, bucket=bucket, **row))
        if objs:
            # Rollups run one at a time (scheduling: exclusive): no other writer races for the partition.
            (partitions.ROLLUPS_5MIN if period == FIVE else partitions.ROLLUPS_1H).ensure([bucket])
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
