"""Raw samples in hourly partitions on PostgreSQL (one table on SQLite), and the migration that moved them."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from support import T0, later, snapshot

from fabricweb.telemetry import partitions
from fabricweb.telemetry.ingest import ingest_batch
from fabricweb.telemetry.models import PortSample
from tests.e2e.e2e_harness import SECRET, clean_env, fresh_database

REPO = Path(__file__).resolve().parents[2]
PORTS = 4


def test_ingest_puts_each_hours_samples_in_a_partition_of_its_own(each_db):
    base = snapshot()
    polls = [later(base, 60 * m) for m in (0, 30, 59, 61, 125)]  # 12:00 to 14:05
    ingest_batch(polls[:3])
    ingest_batch(polls[3:])
    assert PortSample.objects.count() == 5 * PORTS
    if each_db == "sqlite":  # one plain table: nothing to create
        assert not partitions.partitioned()
        return
    assert partitions.hours() == [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM telemetry_portsample GROUP BY 1 ORDER BY 1")
        assert cursor.fetchall() == [
            ("telemetry_portsample_p2026030112", 3 * PORTS),
            ("telemetry_portsample_p2026030113", 1 * PORTS),
            ("telemetry_portsample_p2026030114", 1 * PORTS),
        ]
    # Readers see one table: a port's last hour across two partitions, in time order.
    port = PortSample.objects.order_by("ts").first().port
    got = list(PortSample.objects.filter(port=port, ts__gte=T0 + timedelta(minutes=59)).order_by("ts"))
    assert [s.ts for s in got] == [T0 + timedelta(minutes=m) for m in (59, 61, 125)]


def manage(url: str, *args: str) -> None:
    env = clean_env(DATABASE_URL=url, SECRET_KEY=SECRET, LOG_LEVEL="WARNING")
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


ROWS = "SELECT id, ts, symbol_error, rcv_bytes FROM telemetry_portsample ORDER BY id"
OLD_LAYOUT_ROWS = """
from datetime import datetime, timedelta, UTC
from fabricweb.inventory.models import Node, Device, Port
from fabricweb.telemetry.models import PortSample
t0 = datetime(2026, 3, 1, 11, 50, tzinfo=UTC)
node = Node.objects.create(name="cn001", first_seen_at=t0)
device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=t0)
port = Port.objects.create(device=device, number=1, first_seen_at=t0)
PortSample.objects.bulk_create(
    PortSample(port=port, ts=t0 + timedelta(minutes=5 * k), interval_s=300.0, symbol_error=k, rcv_bytes=10**12 + k)
    for k in range(6)
)
"""


@pytest.mark.skipif(not os.environ.get("TEST_POSTGRES_URL"), reason="TEST_POSTGRES_URL is not set")
def test_the_migration_moves_samples_stored_in_the_old_layout_into_hourly_partitions(tmp_path):
    with fresh_database("postgres", tmp_path) as url:
        manage(url, "migrate", "inventory")
        manage(url, "migrate", "telemetry", "0001")
        manage(url, "shell", "-c", OLD_LAYOUT_ROWS)
        with psycopg.connect(url) as db:
            before = db.execute(ROWS).fetchall()
        assert len(before) == 6

        manage(url, "migrate")

        with psycopg.connect(url) as db:
            after = db.execute(ROWS).fetchall()
            assert after == before  # every row, with its id
            by_partition = db.execute(
                "SELECT tableoid::regclass::text, count(*) FROM telemetry_portsample GROUP BY 1 ORDER BY 1"
            ).fetchall()
            assert by_partition == [("telemetry_portsample_p2026030111", 2), ("telemetry_portsample_p2026030112", 4)]
            # New samples continue the ids.
            new_id = db.execute(
                "INSERT INTO telemetry_portsample (port_id, ts, interval_s, reset, capped) "
                "SELECT port_id, ts + interval '5 minutes', 300, false, false FROM telemetry_portsample "
                "ORDER BY ts DESC LIMIT 1 RETURNING id"
            ).fetchone()[0]
            assert new_id == before[-1][0] + 1
