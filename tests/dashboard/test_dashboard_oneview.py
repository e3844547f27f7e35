"""Covers fabricweb/dashboard/oneview.py, fabricweb/dashboard/overviewmodel.py,
fabricweb/dashboard/views/switchpages.py.

The overview's counts and grid, and the fabric page's sections, from one view of the database while others commit
beside them: on PostgreSQL through the overview itself, with a node marked stale by another connection between its
queries, and through /fabric/, with a switch lost between its counts and its grid; on SQLite (WAL, IMMEDIATE
transactions, as production configures it) at the view itself, which must not hold the writer up."""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, connections
from django.utils import timezone

from fabricweb.dashboard import overviewmodel
from fabricweb.dashboard.oneview import one_view
from fabricweb.fabric.models import FabricNode
from fabricweb.inventory.models import Node
from tests.api.api_support import SimFabric
from tests.dashboard.dashboard_support import Browser, create_roles, make_user
from tests.fabric.fabric_support import polled_worlds


def stale_marks(model: overviewmodel.Model) -> int:
    return str(model.grid).count(" (stale)</a>")


@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_the_overview_counts_and_draws_a_node_marked_stale_mid_build_alike(postgres, tmp_path):
    fab = SimFabric(tmp_path / "sim", 3, start=timezone.now() - timedelta(minutes=1))
    fab.poll()
    fab.poll()
    table = connection.ops.quote_name(Node._meta.db_table)
    queries: list[str] = []

    def mark_cn002_stale_from_elsewhere(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        queries.append(sql)
        if len(queries) == 2:  # the fingerprint, then the hosts' counts: the grid's queries are still to come
            with psycopg.connect(postgres, autocommit=True) as other:
                other.execute(f"UPDATE {table} SET stale = true WHERE name = 'cn002'")
        return result

    with connection.execute_wrapper(mark_cn002_stale_from_elsewhere):
        model = overviewmodel.overview({})
    assert len(queries) > 3
    # Built in one view: what the first query saw, counts and grid alike (read one by one: 0 stale, 1 marked).
    assert (model.counts.stale_nodes, stale_marks(model)) == (0, 0)
    # The next request sees the change in the fingerprint, and draws it everywhere.
    model = overviewmodel.overview({})
    assert (model.counts.stale_nodes, stale_marks(model)) == (1, 1)


@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_the_fabric_page_counts_and_draws_a_switch_lost_mid_request_alike(postgres, tmp_path):
    create_roles()  # (a transactional test's flush empties the migration's rows)
    polled_worlds(tmp_path)(polls=2)
    viewer = Browser(make_user("victor", "viewer"))
    fabric_nodes = connection.ops.quote_name(FabricNode._meta.db_table)
    spine = Node.objects.get(name="spine01").pk
    lost: list[str] = []

    def lose_spine01_from_elsewhere(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        # After the head's count of unreachable switches: the grid's query, which draws them, is still to come.
        if not lost and "missing_since" in sql and "COUNT(" in sql:
            with psycopg.connect(postgres, autocommit=True) as other:
                other.execute(f"UPDATE {fabric_nodes} SET missing_since = now() WHERE node_id = %s", [spine])
            lost.append(sql)
        return result

    with connection.execute_wrapper(lose_spine01_from_elsewhere):
        response = viewer.get("/fabric/")
    assert lost
    # One view: what its first query saw, in the head and the grid alike (read one by one: 0 counted, 1 drawn).
    html = response.content.decode()
    assert (response.context["counts"].unreachable, html.count("spine01 (unreachable)")) == (0, 0)
    response = viewer.get("/fabric/")
    assert response.context["counts"].unreachable == 1
    assert "spine01 (unreachable)" in response.content.decode()


@pytest.fixture
def wal_database(tmp_path, django_db_blocker):
    """A SQLite file as production opens one (fabricweb.sqlitedb, WAL, IMMEDIATE), as connections['view']."""
    config = {
        "ENGINE": "fabricweb.sqlitedb",
        "NAME": str(tmp_path / "view.sqlite3"),
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 5, "init_command": "PRAGMA journal_mode=WAL;"},
    }
    connections.settings["view"] = connections.configure_settings({"default": dict(config), "view": config})["view"]
    with django_db_blocker.unblock():  # a database of its own, not the tests' one
        yield from _opened(connections["view"])


def _opened(reader):
    try:
        with reader.cursor() as cursor:
            cursor.execute("CREATE TABLE hosts (name TEXT)")
            cursor.execute("INSERT INTO hosts VALUES ('cn001')")
        yield reader
    finally:
        connections["view"].close()
        del connections["view"]
        del connections.settings["view"]


def count(reader) -> int:
    with reader.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM hosts")
        return cursor.fetchone()[0]


def test_on_sqlite_a_view_sees_its_first_reads_database_and_lets_the_writer_commit_meanwhile(wal_database):
    writer = sqlite3.connect(wal_database.settings_dict["NAME"], timeout=0.5, isolation_level=None)
    try:
        with one_view(wal_database):
            assert count(wal_database) == 1
            started = time.monotonic()
            writer.execute("BEGIN IMMEDIATE")  # as ingest begins its batches: the write lock at once
            writer.execute("INSERT INTO hosts VALUES ('cn002')")
            writer.execute("COMMIT")
            assert time.monotonic() - started < 0.4  # not held up by the view
            assert count(wal_database) == 1  # still the view of the first read
        assert count(wal_database) == 2
        assert not wal_database.in_atomic_block and wal_database.get_autocommit()
    finally:
        writer.close()


def test_inside_a_transaction_already_open_the_view_is_that_one(wal_database):
    from django.db import transaction

    with transaction.atomic(using="view"), one_view(wal_database):
        assert count(wal_database) == 1
        with wal_database.cursor() as cursor:
            cursor.execute("INSERT INTO hosts VALUES ('cn003')")  # the caller's transaction, writable as it was
        assert count(wal_database) == 2
    assert count(wal_database) == 2
