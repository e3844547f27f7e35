"""Rollups into time partitions on PostgreSQL (fabricweb/telemetry/storage/partitions.py); nothing on SQLite.

`telemetry_portrollup` becomes a table partitioned by list of period_s, each of its two
partitions partitioned again by range of bucket: 5-minute rollups by UTC day
(`telemetry_portrollup_300_pYYYYMMDD`), hourly ones by UTC month
(`telemetry_portrollup_3600_pYYYYMM`), so retention drops a day or a month at a time.

The rollups already stored are moved like the samples were in 0002: the old table is
renamed, the partitions their buckets need are created, the rows are copied with their ids,
the old table is dropped. What changes: no primary key index (ids from a sequence); the
unique (port, period, bucket) index stays, on every partition; the (period, bucket) B-tree
becomes a BRIN on bucket (rollups are written in bucket order).
"""

from datetime import UTC, timedelta

from django.db import migrations

TABLE = "telemetry_portrollup"
OLD = "telemetry_portrollup_unpartitioned"
SEQUENCE = "telemetry_portrollup_id_partitioned_seq"


def _next_month(start):
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


# period_s -> (date_trunc unit, suffix of a partition's name, the start of the next span)
SPANS = {
    300: ("day", "%Y%m%d", lambda start: start + timedelta(days=1)),
    3600: ("month", "%Y%m", _next_month),
}


def partition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE "{TABLE}" RENAME TO "{OLD}"')
        cursor.execute(f'ALTER TABLE "{OLD}" RENAME CONSTRAINT "telemetry_rollup_unique_bucket" TO "{OLD}_unique"')
        cursor.execute(f'ALTER INDEX "telemetry_rollup_period_bucket" RENAME TO "{OLD}_period_bucket"')
        cursor.execute(f'CREATE TABLE "{TABLE}" (LIKE "{OLD}" INCLUDING DEFAULTS) PARTITION BY LIST (period_s)')
        # Identity columns on partitioned tables need PostgreSQL 17: a sequence owned by the column instead.
        cursor.execute(f'CREATE SEQUENCE "{SEQUENCE}" AS bigint OWNED BY "{TABLE}".id')
        cursor.execute(f'ALTER TABLE "{TABLE}" ALTER COLUMN id SET DEFAULT nextval(\'"{SEQUENCE}"\')')
        cursor.execute(
            f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "telemetry_portrollup_port_id_fk_inventory_port_id" '
            "FOREIGN KEY (port_id) REFERENCES inventory_port (id) DEFERRABLE INITIALLY DEFERRED"
        )
        for period in SPANS:
            cursor.execute(
                f'CREATE TABLE "{TABLE}_{period}" PARTITION OF "{TABLE}" FOR VALUES IN ({period}) '
                "PARTITION BY RANGE (bucket)"
            )
        cursor.execute(
            f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "telemetry_rollup_unique_bucket" UNIQUE (port_id, period_s, bucket)'
        )
        cursor.execute(f'CREATE INDEX "telemetry_rollup_period_bucket" ON "{TABLE}" USING brin (bucket)')
        for period, (unit, suffix, after) in SPANS.items():
            cursor.execute(
                f"SELECT DISTINCT date_trunc('{unit}', bucket AT TIME ZONE 'UTC') FROM \"{OLD}\" WHERE period_s = %s",
                [period],
            )
            for (naive,) in cursor.fetchall():
                start = naive.replace(tzinfo=UTC)
                cursor.execute(
                    f'CREATE TABLE "{TABLE}_{period}_p{start:{suffix}}" PARTITION OF "{TABLE}_{period}" '
                    "FOR VALUES FROM (%s) TO (%s)",
                    [start, after(start)],
                )
        cursor.execute(f'INSERT INTO "{TABLE}" SELECT * FROM "{OLD}"')
        cursor.execute(f'SELECT setval(\'"{SEQUENCE}"\', (SELECT coalesce(max(id), 0) + 1 FROM "{OLD}"), false)')
        cursor.execute(f'DROP TABLE "{OLD}"')


class Migration(migrations.Migration):
    # The copy is one statement; the rename and the drop must not be split from it.
    atomic = True

    dependencies = [("telemetry", "0004_pack_samples")]

    operations = [migrations.RunPython(partition, migrations.RunPython.noop, elidable=False)]
