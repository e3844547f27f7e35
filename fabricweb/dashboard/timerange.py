"""The time range a port's charts draw: a named one (`?range=24h`) or a custom one (`?from=...&to=...`,
ISO times, UTC when they carry no offset), and the resolution it is drawn at (raw samples, 5-minute or
1-hour rollups): the finest one that is still kept for its start and not too many points for its span.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Min
from django.utils.dateparse import parse_datetime

from fabricweb.telemetry.models import NodePoll, PortRollup

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR
RESOLUTIONS = {None: "raw", FIVE: "5-minute", HOUR: "hourly"}
SOURCES = {None: "raw samples", FIVE: "5-minute rollups", HOUR: "1-hour rollups"}
# The longest span each resolution draws (a custom range): about 2,000 points at a 10 s poll, 2,000 buckets.
MOST_SPAN = {None: timedelta(hours=6), FIVE: timedelta(days=7)}
LEAST_SPAN = timedelta(minutes=1)
LONGEST = timedelta(days=366)
TIME_EXAMPLE = "2026-12-02T01:33Z"


class BadRange(ValueError):
    """A range the page cannot draw; the message says which field and why, in the operator's words."""


@dataclass(frozen=True, slots=True)
class Range:
    name: str | None  # None: a custom from/to range
    span: timedelta
    period_s: int | None  # None: raw samples

    @property
    def source(self) -> str:
        return SOURCES[self.period_s]

    @property
    def resolution(self) -> str:
        return RESOLUTIONS[self.period_s]


@dataclass(frozen=True, slots=True)
class Window:
    """[since, until) at a resolution; `live` when it ends now (a named range: samples stamped by a node
    whose clock runs ahead are still drawn)."""

    since: datetime
    until: datetime
    range: Range
    live: bool


RANGES = {
    r.name: r
    for r in (
        Range("1h", timedelta(hours=1), None),
        Range("6h", timedelta(hours=6), None),
        Range("24h", timedelta(hours=24), FIVE),
        Range("7d", timedelta(days=7), FIVE),
        Range("30d", timedelta(days=30), HOUR),
    )
}
DEFAULT = "1h"


def _time(field: str, value: str) -> datetime:
    try:
        when = parse_datetime(value.strip()) if len(value) <= 40 else None
    except ValueError:  # well formed, not a date (month 13)
        when = None
    if when is None:
        raise BadRange(f"{field}: expected an ISO time such as {TIME_EXAMPLE} (UTC)")
    try:
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 with an offset that carries it past datetime's range
        raise BadRange(f"{field}: {value.strip()[:40]} is out of the range of times") from None


def _resolution(since: datetime, span: timedelta, now: datetime) -> int | None:
    """The finest resolution still kept at `since` whose points fit the span."""
    kept = {None: settings.FABRIC_RETAIN_RAW, FIVE: settings.FABRIC_RETAIN_5MIN}
    for period in (None, FIVE):
        if span <= MOST_SPAN[period] and since >= now - timedelta(seconds=kept[period]):
            return period
    return HOUR


def choose(query: Mapping[str, str], now: datetime) -> Window:
    """The window a request asks for; BadRange (its message) for one that cannot be drawn."""
    start, end = query.get("from", ""), query.get("to", "")
    if not start and not end:
        wanted = RANGES.get(query.get("range", DEFAULT))
        if wanted is None:
            raise BadRange(f"range: expected one of {', '.join(RANGES)}")
        return Window(now - wanted.span, now, wanted, live=True)
    if not start:
        raise BadRange(f"from: missing; a range needs its start, such as {TIME_EXAMPLE} (UTC)")
    since = _time("from", start)
    until = min(_time("to", end), now) if end else now
    if since >= now:
        raise BadRange(f"from: {since:%Y-%m-%d %H:%M} UTC is in the future")
    if until - since < LEAST_SPAN:
        raise BadRange("to: must be at least 1 minute after from")
    if until - since > LONGEST:
        raise BadRange(f"from/to: at most {LONGEST.days} days apart")
    span = until - since
    return Window(since, until, Range(None, span, _resolution(since, span, now)), live=False)


def first_data() -> datetime | None:
    """When the fabric's first data was taken, as precisely as what is still kept says: the oldest hourly
    bucket, refined by a 5-minute bucket and a raw sample where those still reach back that far."""
    first = None
    for rows, field, within in (
        (PortRollup.objects.filter(period_s=HOUR), "bucket", timedelta(seconds=HOUR)),
        (PortRollup.objects.filter(period_s=FIVE), "bucket", timedelta(seconds=HOUR)),
        (NodePoll.objects.all(), "ts", timedelta(seconds=FIVE)),
    ):
        oldest = rows.aggregate(oldest=Min(field))["oldest"]
        if oldest is not None and (first is None or oldest < first + within):
            first = oldest
    return first
