"""Covers fabricweb/health/records/context.py, fabricweb/dashboard/views/actions.py,
fabricweb/dashboard/views/overview.py, fabricweb/dashboard/overviewmodel.py, fabricweb/fabric/models.py,
fabricweb/fabric/migrations/.

The overview's counts and grid, built once per change of the data (fabricweb/dashboard/overviewmodel.py):
every change the page shows is there at the next request, though nothing tells the process (the changes
below are written as another process writes them: ingest, the health engine, an operator's action)."""

from __future__ import annotations

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fabricweb.dashboard.overviewmodel import fingerprint, fingerprint_query
from fabricweb.fabric.models import FabricNode
from fabricweb.health.models import Event, LinkPolicy
from fabricweb.health.records import context
from fabricweb.inventory.models import Node
from tests.api.api_support import event, port
from tests.dashboard.dashboard_support import Browser, grid_cell, make_user, overview_grid


def grid(browser: Browser, query: dict | None = None, html: str | None = None) -> str:
    return overview_grid(html or browser.text("/", query))


def counts(html: str) -> str:
    return html.split('id="live-counts"')[1].split("</section>")[0]


def cell(browser: Browser, where: str) -> str:
    """The grid's cell of a port ("cn001/mlx5_0/1"): its class, and its tooltip when it has one."""
    return grid_cell(browser.text("/"), where)


def test_the_overview_reads_the_ports_once_per_change_of_the_data(viewer, faulty):
    with CaptureQueriesContext(connection) as cold:
        first = viewer.text("/")
    with CaptureQueriesContext(connection) as warm:
        second = viewer.text("/")
    assert grid(viewer, html=second) == grid(viewer, html=first) and counts(second) == counts(first)
    # The ports, the nodes, the open events by severity and the problems' kinds are not read again.
    assert len(warm) <= len(cold) - 4


def test_a_new_batch_shows_at_once(viewer, faulty):
    assert cell(viewer, "cn001/mlx5_0/1") == "up"
    faulty.fabric.add_fault("cn001/mlx5_0/1:down")
    faulty.poll()
    assert cell(viewer, "cn001/mlx5_0/1").startswith("down")
    assert viewer.get("/").context["counts"].down == 2


def test_an_event_opened_changed_or_resolved_shows_at_once(viewer, faulty):
    before = viewer.get("/").context["counts"].open_events
    assert cell(viewer, "cn001/mlx5_0/1") == "up"
    opened = event(port("cn001", "mlx5_0", 1), "symbol_errors", "warning", timezone.now())
    assert cell(viewer, "cn001/mlx5_0/1") == "erroring cn001 mlx5_0/1: errors (symbol errors)"
    assert viewer.get("/").context["counts"].open_events["warning"] == before["warning"] + 1

    Event.objects.filter(pk=opened.pk).update(severity="critical")
    counts = viewer.get("/").context["counts"].open_events
    assert (counts["critical"], counts["warning"]) == (before["critical"] + 1, before["warning"])

    Event.objects.filter(pk=opened.pk).update(resolved_at=timezone.now())
    assert cell(viewer, "cn001/mlx5_0/1") == "up"
    assert viewer.get("/").context["counts"].open_events == before


def test_acknowledging_and_silencing_show_at_once(operator, faulty):
    down = Event.objects.get(kind="down", resolved_at__isnull=True)
    grid_before = grid(operator)
    assert "acknowledged by olga" not in operator.text("/")
    operator.post(f"/events/{down.pk}/acknowledge", {"note": "cable ordered"})
    assert "acknowledged by olga" in operator.text("/")
    operator.post(f"/events/{down.pk}/silence", {"duration": "1h"})
    assert "silenced until" in operator.text("/")
    assert grid(operator) == grid_before  # neither changes a port's health


def test_accepting_and_undoing_a_baseline_show_at_once(operator, faulty):
    assert cell(operator, "cn002/mlx4_0/1").startswith("degraded")
    operator.post("/ports/cn002/mlx4_0/1/baseline")
    assert cell(operator, "cn002/mlx4_0/1") == "up"
    assert operator.get("/").context["counts"].degraded == 0
    operator.post("/ports/cn002/mlx4_0/1/baseline/undo")
    assert cell(operator, "cn002/mlx4_0/1").startswith("degraded")


def test_a_link_policy_shows_with_the_poll_that_applies_it(viewer, faulty):
    trained = port("cn001", "mlx5_0", 1)
    assert cell(viewer, "cn001/mlx5_0/1") == "up"
    # Wider than it runs: the health engine writes the expectation on the port at its next ingest.
    LinkPolicy.objects.create(
        name="cn001 wide", node_glob="cn001", device_glob="mlx5_0", speed=trained.speed, lanes=trained.lanes * 2
    )
    context.forget()
    faulty.poll()
    assert cell(viewer, "cn001/mlx5_0/1").startswith("degraded")
    LinkPolicy.objects.filter(name="cn001 wide").delete()
    context.forget()
    faulty.poll()
    assert cell(viewer, "cn001/mlx5_0/1") == "up"


def test_a_node_marked_stale_shows_at_once(viewer, faulty):
    assert "cn001 (stale)" not in grid(viewer)
    Node.objects.filter(name="cn001").update(stale=True)  # health.records.staleness, in the beat process
    assert "cn001 (stale)" in grid(viewer)
    assert cell(viewer, "cn001/mlx5_0/1").startswith("unknown")


def test_each_user_gets_their_own_actions_beside_the_shared_grid(operator, viewer, faulty):
    seen_by_viewer = viewer.text("/")
    assert 'class="ack-form"' in operator.text("/")
    again = viewer.text("/")
    assert 'class="ack-form"' not in again and "Silence this" not in again
    assert grid(viewer) == grid(operator)
    assert counts(again) == counts(seen_by_viewer) and grid(viewer, html=again) == grid(viewer, html=seen_by_viewer)
    # A filter is its own grid; the plain overview is still the whole one.
    assert re.findall(r'href="/ports/([^"]+)/"', grid(viewer, {"state": "down"})) == ["cn003/mlx5_1/1"]
    other = Browser(make_user("wendy", "viewer"))
    assert grid(other) == grid(viewer)


def _plan(sql: str, params: list) -> str:
    """The plan the database chooses for `sql`, as text: PostgreSQL's EXPLAIN, SQLite's EXPLAIN QUERY PLAN."""
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql, params)
        return "\n".join(" ".join(str(v) for v in row) for row in cursor.fetchall())


def test_it_reads_the_fabric_nodes_no_longer_reached_through_their_partial_index(each_db):
    now = timezone.now()
    FabricNode.objects.bulk_create(
        FabricNode(guid=f"0x{i:016x}", node_type=2, num_ports=40, first_seen_at=now,
                   missing_since=now if i % 1000 == 0 else None)
        for i in range(1, 5001)
    )  # fmt: skip
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {FabricNode._meta.db_table}")  # the statistics a running database keeps
    missing = list(FabricNode.objects.filter(missing_since__isnull=False).values_list("id", flat=True))
    assert len(missing) == 5 and fingerprint()[5:7] == (5, sum(missing))
    plan = _plan(*fingerprint_query())
    assert "fabric_node_missing" in plan, plan
    table = FabricNode._meta.db_table
    # Every other read of the table goes through an index too: none is a scan of its every row.
    assert f"Seq Scan on {table}" not in plan and not re.search(rf"SCAN {table}(?! USING)", plan), plan
