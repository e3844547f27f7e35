"""Time-partitioned tables on PostgreSQL: partitions created as their span begins, dropped whole by retention.

- raw samples, `telemetry_nodepoll` (migration telemetry.0003), one partition per UTC hour
  of `ts`: `telemetry_nodepoll_pYYYYMMDDHH`;
- 5-minute rollups, `telemetry_portrollup_300` (a partition of `telemetry_portrollup` for
  period_s = 300, migration telemetry.0004), one partition per UTC day of `bucket`:
  `telemetry_portrollup_300_pYYYYMMDD`;
- hourly rollups, `telemetry_portrollup_3600`, one partition per UTC month: `..._pYYYYMM`.

Deleting expired rows row by row cost as much as writing them (WAL, dead tuples, vacuum);
dropping a partition costs nothing per row. SQLite keeps plain tables: retention deletes a
span's rows per statement there (history/retention.py), with the same span-by-span semantics.

Writers call `ensure` with the times they are about to write before they lock any row: a
partition missing is created then (`CREATE TABLE ... PARTITION OF`, under an advisory lock
so two writers do not race). Spans known to exist are remembered per process once committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

HOUR = timedelta(hours=1)
_LOCK_KEY = 0x7E1E_5A4D  # pg_advisory_xact_lock: one creator of a partition at a time


def hour_of(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(ts: datetime) -> datetime:
    return hour_of(ts).replace(hour=0)


def month_of(ts: datetime) -> datetime:
    return day_of(ts).replace(day=1)


def _next_hour(start: datetime) -> datetime:
    return start + HOUR


def _next_day(start: datetime) -> datetime:
    return start + timedelta(days=1)


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


def partitioned() -> bool:
    return connection.vendor == "postgresql"


@dataclass(eq=False)
class Partitioned:
    """One table partitioned by range of time, one partition per span (hour, day or month)."""

    table: str
    floor: Callable[[datetime], datetime]  # a time -> the start of its span
    after: Callable[[datetime], datetime]  # the start of a span -> the start of the next
    suffix: str  # strftime of a span's start in its partition's name
    _known: set[datetime] = field(default_factory=set)  # spans whose partition this process saw committed

    def name(self, start: datetime) -> str:
        return f"{self.table}_p{start:{self.suffix}}"

    def ensure(self, times: Iterable[datetime]) -> None:
        """Make sure the partition of every time in `times` exists (PostgreSQL; nothing elsewhere)."""
        if not partitioned():
            return
        # A remembered span may have been dropped since by another process's retention: trust only recent ones.
        now = self.floor(datetime.now(UTC))
        missing = {s for s in map(self.floor, times) if s not in self._known or self.after(s) < now}
        if not missing:
            return
        with connection.cursor() as cursor:
            for start in sorted(missing):
                name = self.name(start)
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
                if not cursor.fetchone()[0]:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
                    cursor.execute(
                        f'CREATE TABLE IF NOT EXISTS "{name}" PARTITION OF "{self.table}" FOR VALUES FROM (%s) TO (%s)',
                        [start, self.after(start)],
                    )
                # Remembered only once committed: a rolled-back batch takes its new partition with it.
                transaction.on_commit(lambda start=start: self._known.add(start))

    def known(self, ts: datetime) -> bool:
        """Whether this process saw the partition of `ts` committed (no query)."""
        return self.floor(ts) in self._known

    def has(self, ts: datetime) -> bool:
        """Whether the partition of `ts` exists (PostgreSQL; always on a plain table)."""
        if not partitioned():
            return True
        start = self.floor(ts)
        if start in self._known:
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [self.name(start)])
            return bool(cursor.fetchone()[0])

    def spans(self) -> list[datetime]:
        """The starts of the spans that have a partition, oldest first (PostgreSQL)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = %s::regclass",
                [self.table],
            )
            names = [row[0] for row in cursor.fetchall()]
        prefix = f"{self.table}_p"
        return sorted(
            datetime.strptime(n[len(prefix) :], self.suffix).replace(tzinfo=UTC) for n in names if n.startswith(prefix)
        )

    def drop_before(self, cutoff: datetime) -> int:
        """Drop the partitions of spans that ended at or before `cutoff`; how many (PostgreSQL)."""
        dropped = 0
        for start in self.spans():
            if self.after(start) > cutoff:
                break
            with transaction.atomic(), connection.cursor() as cursor:
                # Dropping a partition locks its parent: never wait long behind a writer, try again next time.
                cursor.execute("SET LOCAL lock_timeout = '5s'")
                # Deferred foreign-key checks of rows written earlier in this transaction must not hold the drop.
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute(f'DROP TABLE IF EXISTS "{self.name(start)}"')
            self._known.discard(start)
            dropped += 1
        return dropped


SAMPLES = Partitioned("telemetry_nodepoll", hour_of, _next_hour, "%Y%m%d%H")
ROLLUPS_5MIN = Partitioned("telemetry_portrollup_300", day_of, _next_day, "%Y%m%d")
ROLLUPS_1H = Partitioned("telemetry_portrollup_3600", month_of, _next_month, "%Y%m")
