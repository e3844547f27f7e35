"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/history/rollup.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/storage/partitions.py.

Samples and rollups in time partitions on PostgreSQL (plain tables on SQLite), and the migrations that moved them."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection

from fabricweb.inventory.models import Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.history.rollup import rollup
from fabricweb.telemetry.ingest import ingest_batch
from fabricweb.telemetry.models import PortRollup
from fabricweb.telemetry.storage import partitions
from tests.e2e.e2e_harness import fresh_database
from tests.telemetry.telemetry_support import T0, later, manage, snapshot

PORTS = 4


def test_ingest_puts_each_hours_samples_in_a_partition_of_its_own(each_db):
    base = snapshot()
    polls = [later(base, 60 * m) for m in (0, 30, 59, 61, 125)]  # 12:00 to 14:05
    ingest_batch(polls[:3])
    ingest_batch(polls[3:])
    assert len(list(samples.between())) == 5 * PORTS
    if each_db == "sqlite":  # one plain table: nothing to create
        assert not partitions.partitioned()
        return
    assert partitions.SAMPLES.spans() == [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)]
    with connection.cursor() as cursor:
        # One packed row per node and poll.
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM telemetry_nodepoll GROUP BY 1 ORDER BY 1")
        assert cursor.fetchall() == [
            ("telemetry_nodepoll_p2026030112", 3),
            ("telemetry_nodepoll_p2026030113", 1),
            ("telemetry_nodepoll_p2026030114", 1),
        ]
    # Readers see one table: a port's last hour across two partitions, in time order.
    port = Port.objects.order_by("pk").first()
    got = samples.of_port(port, T0 + timedelta(minutes=59))
    assert [s.ts for s in got] == [T0 + timedelta(minutes=m) for m in (59, 61, 125)]


def test_rollups_go_into_a_partition_per_day_and_per_month(each_db):
    base = snapshot()
    ingest_batch([later(base, 60 * m) for m in (0, 1, 2)])
    ingest_batch([later(base, 86400 + 60 * m) for m in (0, 1, 2)])  # the next day
    rollup(now=T0 + timedelta(days=1, hours=2))
    assert PortRollup.objects.filter(period_s=PortRollup.FIVE_MINUTES).count() == 2 * PORTS
    assert PortRollup.objects.filter(period_s=PortRollup.HOUR).count() == 2 * PORTS
    if each_db == "sqlite":
        return
    day = T0.replace(hour=0)
    assert partitions.ROLLUPS_5MIN.spans() == [day, day + timedelta(days=1)]
    assert partitions.ROLLUPS_1H.spans() == [day.replace(day=1)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM telemetry_portrollup GROUP BY 1 ORDER BY 1")
        assert cursor.fetchall() == [
            ("telemetry_portrollup_300_p20260301", PORTS),
            ("telemetry_portrollup_300_p20260302", PORTS),
            ("telemetry_portrollup_3600_p202603", 2 * PORTS),
        ]


# Samples and a rollup as the first layout stored them (migration 0001: a row per port and poll).
OLD_LAYOUT_ROWS = """
from datetime import datetime, timedelta, UTC
from django.db import connection
from fabricweb.inventory.models import Node, Device, Port
t0 = datetime(2026, 3, 1, 11, 50, tzinfo=UTC)
node = Node.objects.create(name="cn001", first_seen_at=t0)
device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=t0)
one = Port.objects.create(device=device, number=1, first_seen_at=t0)
two = Port.objects.create(device=device, number=2, first_seen_at=t0)
ts = connection.ops.adapt_datetimefield_value
with connection.cursor() as cursor:
    for k in range(6):
        for port, speed in ((one, "HDR"), (two, None)):
            cursor.execute(
                "INSERT INTO telemetry_portsample (port_id, ts, interval_s, state_id, speed, lanes, reset, capped, "
                "symbol_error, rcv_bytes) VALUES (%s, %s, %s, 4, %s, 4, %s, false, %s, %s)",
                [port.pk, ts(t0 + timedelta(minutes=5 * k)), 300.0 if k else None, speed, k == 3, k,
                 10**12 + k if port == one else None],
            )
    cursor.execute(
        "INSERT INTO telemetry_portrollup (port_id, period_s, bucket, samples, symbol_error, resets, capped_samples) "
        "VALUES (%s, 300, %s, 2, 7, 0, 0)",
        [one.pk, ts(t0)],
    )
"""
READ = """
import json
from fabricweb.telemetry.history.samples import between
from fabricweb.telemetry.models import PortRollup
print(json.dumps({
    "samples": [
        [s.port_id, s.ts.isoformat(), s.interval_s, s.state_id, s.speed, s.lanes, s.reset, s.capped,
         s.symbol_error, s.rcv_bytes, s.xmit_bytes]
        for s in between()
    ],
    "rollups": [[r.bucket.isoformat(), r.samples, r.symbol_error] for r in PortRollup.objects.all()],
}))
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_migrations_pack_the_samples_and_partition_the_rollups_stored_in_older_layouts(backend, tmp_path):
    if backend == "postgres" and not os.environ.get("TEST_POSTGRES_URL"):
        pytest.fail("TEST_POSTGRES_URL is not set")
    with fresh_database(backend, tmp_path) as url:
        manage(url, "migrate", "inventory")
        manage(url, "migrate", "telemetry", "0001")
        manage(url, "shell", "-c", OLD_LAYOUT_ROWS)

        manage(url, "migrate")

        got = json.loads(manage(url, "shell", "--no-imports", "-c", READ))
        t0 = datetime(2026, 3, 1, 11, 50, tzinfo=UTC)
        expected = []
        for k in range(6):
            when = (t0 + timedelta(minutes=5 * k)).isoformat()
            interval = 300.0 if k else None
            expected.append([1, when, interval, 4, "HDR", 4, k == 3, False, k, 10**12 + k, None])
            expected.append([2, when, interval, 4, None, 4, k == 3, False, k, None, None])
        assert got["samples"] == expected  # every sample, unknown still None, 0 still 0
        assert got["rollups"] == [[t0.isoformat(), 2, 7]]
        if backend == "sqlite":
            return
        with psycopg.connect(url) as db:
            by_partition = db.execute(
                "SELECT tableoid::regclass::text, count(*) FROM telemetry_nodepoll GROUP BY 1 ORDER BY 1"
            ).fetchall()
            assert by_partition == [("telemetry_nodepoll_p2026030111", 2), ("telemetry_nodepoll_p2026030112", 4)]
            rollups = db.execute("SELECT tableoid::regclass::text, id FROM telemetry_portrollup").fetchall()
            assert rollups == [("telemetry_portrollup_300_p20260301", 1)]
            # New rollups continue the ids.
            new_id = db.execute(
                "INSERT INTO telemetry_portrollup (port_id, period_s, bucket, samples, resets, capped_samples) "
                "SELECT port_id, period_s, bucket + interval '5 minutes', 1, 0, 0 FROM telemetry_portrollup "
                "RETURNING id"
            ).fetchone()[0]
            assert new_id == 2


def test_a_node_cannot_have_partitions_created_for_back_dated_snapshots(each_db):
    """A node with rising counters dates each snapshot an hour further back: on PostgreSQL each would have
    created an hour's partition. Refused, said why; a clock step into an hour that has its partition is stored."""
    base = snapshot()
    assert ingest_batch([later(base, 0), later(base, 3 * 3600)]).results[1].status == "stored"
    before = partitions.SAMPLES.spans() if partitions.partitioned() else []
    steps = [later(base, 3 * 3600 - 3600 * k, bump={"port_xmit_data": 1000 * k}) for k in range(1, 4)]
    results = ingest_batch(steps).results
    if each_db == "sqlite":  # no partitions to create: a clock step is stored as before
        assert [r.status for r in results] == ["stored", "stored", "stored"]
        return
    assert [r.status for r in results] == ["refused", "refused", "stored"]  # T0 + 0 h has its partition
    assert results[0].note == (
        "dated 2026-03-01T14:00:00Z, not after its last stored poll (2026-03-01T15:00:00Z) and more than 1 h "
        "before this server's clock: "
        "its hour has no partition of samples, and may not get one"
    )
    after = partitions.SAMPLES.spans()
    assert after == before and {T0, T0 + timedelta(hours=3)} <= set(after)
    assert not {T0 + timedelta(hours=1), T0 + timedelta(hours=2)} & set(after)


def test_a_snapshot_long_before_the_newest_samples_creates_no_partition(each_db, settings):
    settings.FABRIC_RETAIN_RAW = 48 * 3600.0
    base = snapshot()
    ingest_batch([later(base, 72 * 3600)])
    long_ago = T0 - timedelta(days=400)  # an hour no test has a partition for
    other = snapshot(host="cn002", at=long_ago)  # a new node, dated long before what is stored
    result = ingest_batch([other]).results[0]
    if each_db == "sqlite":
        assert result.status == "stored"
        return
    assert result.status == "refused"
    assert "more than FABRIC_RETAIN_RAW before the newest samples" in result.note
    assert long_ago not in partitions.SAMPLES.spans()
