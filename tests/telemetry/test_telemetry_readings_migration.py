"""Covers fabricweb/inventory/readings.py.

inventory.0006 moves the per-poll readings out of the port rows without losing a baseline.

Slow for a unit test (~10 s: three `manage.py` runs on a fresh PostgreSQL database), as the
partition migration's test is: the upgrade of a running fabric is what it checks.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import psycopg
import pytest

from fabricweb.inventory import readings
from tests.e2e.e2e_harness import fresh_database
from tests.telemetry.telemetry_support import manage

OLD_PORT_ROWS = """
from datetime import datetime, UTC
from django.db import connection
from django.db.migrations.loader import MigrationLoader
apps = MigrationLoader(connection).project_state(("inventory", "0004_node_ingest_token")).apps
Node, Device, Port = (apps.get_model("inventory", m) for m in ("Node", "Device", "Port"))
t0 = datetime(2026, 3, 1, 11, 50, tzinfo=UTC)
node = Node.objects.create(name="cn001", first_seen_at=t0)
device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=t0)
for number in (1, 2):
    Port.objects.create(
        device=device, number=number, first_seen_at=t0, last_collected_at=t0, state_polls=7 + number,
        counters={"symbol_error": 5, "port_xmit_data": 295147905179352825856}, counters_ext={},
        hw_counters={"out_of_buffer": 2}, recent=[[1772365790.5, 10.0, {"symbol_error": 1}]],
    )
"""


@pytest.mark.skipif(not os.environ.get("TEST_POSTGRES_URL"), reason="TEST_POSTGRES_URL is not set")
def test_the_migration_carries_every_ports_readings_over(tmp_path):
    with fresh_database("postgres", tmp_path) as url:
        manage(url, "migrate", "inventory", "0004")
        manage(url, "shell", "-c", OLD_PORT_ROWS)
        manage(url, "migrate")
        with psycopg.connect(url) as db:
            counters, history = db.execute("SELECT counters, history FROM inventory_nodereadings").fetchone()
            ids = [i for (i,) in db.execute("SELECT id FROM inventory_port ORDER BY number")]
            compression = db.execute(
                "SELECT array_agg(attcompression::text ORDER BY attname) FROM pg_attribute "
                "WHERE attrelid IN ('inventory_nodereadings'::regclass, 'inventory_nodehwreadings'::regclass) "
                "AND attname IN ('counters', 'history', 'hw_counters')"
            ).fetchone()[0]
        assert compression == ["l", "l", "l"]  # lz4: this PostgreSQL has it (inventory.0015: hw_counters too)
        got = readings.decode(counters, history)
        t0 = datetime(2026, 3, 1, 11, 50, tzinfo=UTC)
        for polls, pk in enumerate(ids, start=8):
            assert got[pk] == [
                t0,
                polls,
                {"symbol_error": 5, "port_xmit_data": 295147905179352825856},  # past 64 bits, exact
                {},
                {"out_of_buffer": 2},
                [[1772365790.5, 10.0, {"symbol_error": 1}]],
            ]
