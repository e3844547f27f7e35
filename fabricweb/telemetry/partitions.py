"""Raw samples in hourly partitions on PostgreSQL: created by ingest as hours begin, dropped whole by retention.

`telemetry_portsample` is a table partitioned by range of `ts` (migration telemetry.0002),
one partition per UTC hour, `telemetry_portsample_pYYYYMMDDHH`. Deleting 48 h-old samples
row by row cost as much as writing them (WAL, dead tuples, vacuum); dropping an hour's
partition costs nothing per row. SQLite keeps one plain table: retention deletes an hour
of rows per statement there (retention.py), with the same hour-by-hour semantics.

Ingest calls `ensure` with the hours of a batch before it locks any row: a partition
missing is created then (`CREATE TABLE ... PARTITION OF`, under an advisory lock so two
consumers do not race). Hours known to exist are remembered per process once committed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

SAMPLES = "telemetry_portsample"
HOUR = timedelta(hours=1)
_LOCK_KEY = 0x7E1E_5A4D  # pg_advisory_xact_lock: one creator of a partition at a time

_known: set[datetime] = set()  # hours whose partition this process saw committed


def hour_of(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def partition_name(hour: datetime) -> str:
    return f"{SAMPLES}_p{hour:%Y%m%d%H}"


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def ensure(times: Iterable[datetime]) -> None:
    """Make sure the hour partition of every time in `times` exists (PostgreSQL; nothing elsewhere)."""
    if not partitioned():
        return
    # A remembered hour may have been dropped since by another process's retention: trust only recent ones.
    trusted = hour_of(datetime.now(UTC)) - HOUR
    missing = {h for h in map(hour_of, times) if h not in _known or h < trusted}
    if not missing:
        return
    with connection.cursor() as cursor:
        for hour in sorted(missing):
            name = partition_name(hour)
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            if not cursor.fetchone()[0]:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
                cursor.execute(
                    f'CREATE TABLE IF NOT EXISTS "{name}" PARTITION OF "{SAMPLES}" FOR VALUES FROM (%s) TO (%s)',
                    [hour, hour + HOUR],
                )
            # Remembered only once committed: a rolled-back batch takes its new partition with it.
            transaction.on_commit(lambda hour=hour: _known.add(hour))


def hours() -> list[datetime]:
    """The hours that have a partition, oldest first (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [SAMPLES],
        )
        names = [row[0] for row in cursor.fetchall()]
    prefix = f"{SAMPLES}_p"
    return sorted(
        datetime.strptime(n[len(prefix) :], "%Y%m%d%H").replace(tzinfo=UTC) for n in names if n.startswith(prefix)
    )


def drop_before(cutoff: datetime) -> int:
    """Drop the partitions of hours that ended at or before `cutoff`; how many (PostgreSQL)."""
    dropped = 0
    for hour in hours():
        if hour + HOUR > cutoff:
            break
        with transaction.atomic(), connection.cursor() as cursor:
            # Dropping a partition locks its parent: never wait long behind a writer, try again next time.
            cursor.execute("SET LOCAL lock_timeout = '5s'")
            # Deferred foreign-key checks of rows written earlier in this transaction must not hold the drop.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f'DROP TABLE IF EXISTS "{partition_name(hour)}"')
        _known.discard(hour)
        dropped += 1
    return dropped
