"""Bytes per raw port-sample and per rollup row on PostgreSQL, indexes included.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_sample_size.py [--nodes 100] [--polls 31] [--hcas 2] [--ports 2]

Ingests --polls simulated polls of --nodes nodes (collectors.sim, seed 1, 10 s apart) into a
fresh database migrated by the project, then sums pg_total_relation_size (heap, TOAST and
indexes) over every table of the samples' partition tree and divides by the samples: the
packed node-poll rows (telemetry_nodepoll), or on an older tree the row-per-sample table
(telemetry_portsample, partitioned or not): the same script measures both.

Rollups: rollup() over those polls, then the first complete 5-minute bucket's rows copied
to fill a whole UTC day of 5-minute buckets (288 per port) and the first hour's rows to fill
a whole month of hourly buckets (744 per port), so that each is measured as a full partition
would be (or, on an older tree, as the same rows in the one table).
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta

# bench_ingest puts the repository on sys.path: fabricweb is imported after it, in the functions.
from bench_ingest import T0, _drop_postgres_database, _setup_django, generate, snapshot_args


def total_bytes(cursor, table: str) -> tuple[int, int]:
    """(all bytes, heap bytes) over the partition tree of `table`."""
    cursor.execute(
        "SELECT sum(pg_total_relation_size(relid)), sum(pg_relation_size(relid)) FROM pg_partition_tree(%s)", [table]
    )
    total, heap = cursor.fetchone()
    if total is None:  # not partitioned: no tree
        cursor.execute("SELECT pg_total_relation_size(%s), pg_relation_size(%s)", [table, table])
        total, heap = cursor.fetchone()
    return int(total), int(heap)


def measure(args) -> None:
    rounds, what = generate(args)
    with tempfile.TemporaryDirectory(prefix="bench-db-") as scratch:
        label = _setup_django("postgres", scratch)
        from django.db import connection

        from fabricweb.telemetry.ingest import ingest_batch

        try:
            for snaps in rounds:
                for i in range(0, len(snaps), 100):
                    ingest_batch(snaps[i : i + 100])
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
                cursor.execute("SELECT to_regclass('telemetry_nodepoll') IS NOT NULL")
                table = "telemetry_nodepoll" if cursor.fetchone()[0] else "telemetry_portsample"
                samples = count_samples(cursor)
                total, heap = total_bytes(cursor, table)
                cursor.execute(f"SELECT count(*) FROM {table}")
                rows = cursor.fetchone()[0]
                print(f"{what}; {label}")
                print(
                    f"samples ({table}, {rows} rows): {samples} samples, {total / samples:6.1f} B per sample "
                    f"(heap {heap / samples:.1f}, indexes {(total - heap) / samples:.1f}); "
                    f"goal 100 B: {total / samples / 100:.2f}x"
                )
            rollups(connection)
        finally:
            _drop_postgres_database()


def count_samples(cursor) -> int:
    cursor.execute("SELECT to_regclass('telemetry_nodepoll') IS NOT NULL")
    if not cursor.fetchone()[0]:
        cursor.execute("SELECT count(*) FROM telemetry_portsample")
        return cursor.fetchone()[0]
    from fabricweb.telemetry.history import samples

    return sum(1 for _ in samples.between())


def rollups(connection) -> None:
    from fabricweb.telemetry.history.rollup import rollup
    from fabricweb.telemetry.storage import partitions

    first = datetime.fromtimestamp(T0, UTC)
    rollup(now=first + timedelta(hours=2))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM telemetry_portrollup WHERE bucket <> %s", [first])
        cursor.execute("SELECT * FROM telemetry_portrollup LIMIT 0")
        columns = [c.name for c in cursor.description]
        copied = ", ".join(c for c in columns if c != "id")
        for period, count in ((300, 288), (3600, 744)):
            step = timedelta(seconds=period)
            ensure = getattr(partitions, "ROLLUPS_5MIN" if period == 300 else "ROLLUPS_1H", None)
            if ensure is not None:
                ensure.ensure([first + k * step for k in range(count)])
            cursor.execute(
                f"INSERT INTO telemetry_portrollup ({copied}) "
                f"SELECT {copied.replace('bucket', 'bucket + k * %s')} FROM telemetry_portrollup, "
                "generate_series(1, %s) AS k WHERE period_s = %s AND bucket = %s",
                [step, count - 1, period, first],
            )
        cursor.execute("VACUUM ANALYZE telemetry_portrollup")
        for period, table in ((300, "telemetry_portrollup_300"), (3600, "telemetry_portrollup_3600")):
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
            if not cursor.fetchone()[0]:
                table = "telemetry_portrollup"  # an older tree: both periods in one table
            cursor.execute(f"SELECT count(*) FROM {table} WHERE period_s = %s", [period])
            rows = cursor.fetchone()[0]
            cursor.execute("SELECT count(*) FROM telemetry_portrollup")
            everything = cursor.fetchone()[0]
            total, heap = total_bytes(cursor, table)
            share = rows / everything if table == "telemetry_portrollup" else 1.0
            print(
                f"rollups {period:>4} s ({table}): {rows} rows, {total * share / rows:6.1f} B per row "
                f"(heap {heap * share / rows:.1f}, indexes {(total - heap) * share / rows:.1f})"
            )


def main() -> int:
    parser = snapshot_args(__doc__)
    parser.set_defaults(nodes=100, polls=31)
    args = parser.parse_args()
    measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
