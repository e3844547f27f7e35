"""Raw samples into hourly partitions on PostgreSQL (fabricweb/telemetry/storage/partitions.py); nothing on SQLite.

The samples already stored are moved, not dropped: the old table is renamed, a partition is
created for every hour it holds, its rows are copied, then it is dropped. On a large
database this takes as long as copying the table (minutes per hundred million rows) and
needs its size again on disk for the while.

What changes in the table: no primary key index (ids still come from a sequence; nothing
looks a sample up by id, and the index cost ~20 B and a B-tree insert per sample); the
(port, ts) B-tree stays on every partition; the index on ts alone becomes a BRIN index
(ts grows with the insert order: a few pages per hour instead of ~30 B per sample).
"""

from datetime import UTC, timedelta

from django.db import migrations

TABLE = "telemetry_portsample"
OLD = "telemetry_portsample_unpartitioned"
SEQUENCE = "telemetry_portsample_id_partitioned_seq"


def partition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE "{TABLE}" RENAME TO "{OLD}"')
        cursor.execute(f'ALTER INDEX "telemetry_sample_port_ts" RENAME TO "{OLD}_port_ts"')
        cursor.execute(f'ALTER INDEX "telemetry_sample_ts" RENAME TO "{OLD}_ts"')
        cursor.execute(f'CREATE TABLE "{TABLE}" (LIKE "{OLD}" INCLUDING DEFAULTS) PARTITION BY RANGE (ts)')
        # Identity columns on partitioned tables need PostgreSQL 17: a sequence owned by the column instead.
        cursor.execute(f'CREATE SEQUENCE "{SEQUENCE}" AS bigint OWNED BY "{TABLE}".id')
        cursor.execute(f'ALTER TABLE "{TABLE}" ALTER COLUMN id SET DEFAULT nextval(\'"{SEQUENCE}"\')')
        cursor.execute(
            f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "telemetry_portsample_port_id_fk_inventory_port_id" '
            'FOREIGN KEY (port_id) REFERENCES inventory_port (id) DEFERRABLE INITIALLY DEFERRED'
        )
        cursor.execute(f'CREATE INDEX "telemetry_sample_port_ts" ON "{TABLE}" (port_id, ts)')
        cursor.execute(f'CREATE INDEX "telemetry_sample_ts" ON "{TABLE}" USING brin (ts)')
        cursor.execute(f"SELECT DISTINCT date_trunc('hour', ts AT TIME ZONE 'UTC') FROM \"{OLD}\"")
        for (naive,) in cursor.fetchall():
            hour = naive.replace(tzinfo=UTC)
            cursor.execute(
                f'CREATE TABLE "{TABLE}_p{hour:%Y%m%d%H}" PARTITION OF "{TABLE}" FOR VALUES FROM (%s) TO (%s)',
                [hour, hour + timedelta(hours=1)],
            )
        cursor.execute(f'INSERT INTO "{TABLE}" SELECT * FROM "{OLD}"')
        cursor.execute(f'SELECT setval(\'"{SEQUENCE}"\', (SELECT coalesce(max(id), 0) + 1 FROM "{OLD}"), false)')
        cursor.execute(f'DROP TABLE "{OLD}"')


class Migration(migrations.Migration):
    # The copy is one statement; the rename and the drop must not be split from it.
    atomic = True

    dependencies = [
        ("telemetry", "0001_initial"),
        ("inventory", "0004_node_ingest_token"),
    ]

    operations = [migrations.RunPython(partition, migrations.RunPython.noop, elidable=False)]
