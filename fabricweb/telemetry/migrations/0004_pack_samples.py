"""Raw samples packed one row per node-poll (fabricweb/telemetry/storage/packing.py) instead of one row per port.

The table was created by 0003 (a migration of its own, so that Django's deferred index and
foreign-key statements have run before it is replaced here).

PostgreSQL: telemetry_nodepoll is partitioned by hour of ts like the table it replaces
(partitions.py): no primary key index (ids from a sequence), a (node, ts) B-tree on every
partition, a BRIN index on ts. SQLite: one plain table.

The samples already stored are packed and moved, then the old table is dropped. It is one
pass over the old rows in Python (packing alone is ~6 µs per sample; not timed end to end) inside the
migration's transaction; it needs the new table's size (a third of the old) on disk again.
"""

from collections import defaultdict
from datetime import UTC, timedelta

from django.db import migrations, models

from fabricweb.telemetry.storage.packing import pack

TABLE = "telemetry_nodepoll"
SEQUENCE = "telemetry_nodepoll_id_partitioned_seq"
DELTAS = (
    "rcv_bytes",
    "xmit_bytes",
    "rcv_packets",
    "xmit_packets",
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "vl15_dropped",
    "xmit_wait",
)  # the columns of the old table, in packing order (frozen here: the migration must not follow later changes)
HEAD = ("interval_s", "state_id", "phys_state_id", "speed", "lanes", "reset", "capped")


def _partition(cursor) -> None:
    """Replace the plain table 0003 made by one partitioned by range of ts (both still empty)."""
    cursor.execute(f'DROP TABLE "{TABLE}"')
    cursor.execute(
        f'CREATE TABLE "{TABLE}" (id bigint NOT NULL, node_id bigint NOT NULL, ts timestamptz NOT NULL, '
        "ports bytea NOT NULL) PARTITION BY RANGE (ts)"
    )
    # Identity columns on partitioned tables need PostgreSQL 17: a sequence owned by the column instead.
    cursor.execute(f'CREATE SEQUENCE "{SEQUENCE}" AS bigint OWNED BY "{TABLE}".id')
    cursor.execute(f'ALTER TABLE "{TABLE}" ALTER COLUMN id SET DEFAULT nextval(\'"{SEQUENCE}"\')')
    cursor.execute(
        f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "telemetry_nodepoll_node_id_fk_inventory_node_id" '
        "FOREIGN KEY (node_id) REFERENCES inventory_node (id) DEFERRABLE INITIALLY DEFERRED"
    )
    cursor.execute(f'CREATE INDEX "telemetry_poll_node_ts" ON "{TABLE}" (node_id, ts)')
    cursor.execute(f'CREATE INDEX "telemetry_poll_ts" ON "{TABLE}" USING brin (ts)')


def move(apps, schema_editor):
    connection = schema_editor.connection
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            _partition(cursor)
            cursor.execute("SELECT DISTINCT date_trunc('hour', ts AT TIME ZONE 'UTC') FROM telemetry_portsample")
            for (naive,) in cursor.fetchall():
                hour = naive.replace(tzinfo=UTC)
                cursor.execute(
                    f'CREATE TABLE "{TABLE}_p{hour:%Y%m%d%H}" PARTITION OF "{TABLE}" FOR VALUES FROM (%s) TO (%s)',
                    [hour, hour + timedelta(hours=1)],
                )
        columns = ", ".join(f"s.{c}" for c in (*HEAD, *DELTAS))
        cursor.execute(
            f"SELECT d.node_id, s.ts, s.port_id, {columns} FROM telemetry_portsample s "
            "JOIN inventory_port p ON p.id = s.port_id JOIN inventory_device d ON d.id = p.device_id "
            "ORDER BY s.ts, d.node_id"
        )
        polls: dict[tuple, list] = defaultdict(list)
        converter = connection.ops.convert_datetimefield_value if not postgres else None
        field = models.DateTimeField()
        while rows := cursor.fetchmany(10_000):
            for node_id, ts, port_id, *rest in rows:
                if converter is not None:
                    ts = converter(ts, None, connection)
                head = tuple(rest[: len(HEAD)])
                head = (*head[:5], bool(head[5]), bool(head[6]))
                polls[(node_id, ts)].append((port_id, head, tuple(rest[len(HEAD) :])))
        if not polls:
            return
        values = [
            (node_id, ts if postgres else field.get_db_prep_value(ts, connection), pack(entries))
            for (node_id, ts), entries in polls.items()
        ]
        cursor.executemany(f'INSERT INTO "{TABLE}" (node_id, ts, ports) VALUES (%s, %s, %s)', values)


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("telemetry", "0003_nodepoll"),
    ]

    operations = [
        migrations.RunPython(move, migrations.RunPython.noop, elidable=False),
        migrations.DeleteModel(name="PortSample"),
    ]
