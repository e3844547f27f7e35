"""Covers fabricweb/api/views/events.py, fabricweb/api/views/ports.py, fabricweb/api/errors.py.

GET /api/v1/events and /api/v1/events/<id>: open and resolved, filters, newest first, cursor pages."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import T0, SimFabric, event, port, snapshot, without_engine_events

H = timedelta(hours=1)


@pytest.fixture
def history(each_db) -> dict[str, int]:
    """Five events on two nodes: three open, two resolved; two opened at the same instant."""
    ingest_snapshot(snapshot(host="cn001"))
    ingest_snapshot(snapshot(host="cn002"))
    without_engine_events()
    a, b = port("cn001", "mlx5_0", 1), port("cn002", "mlx4_0", 2)
    made = {
        "old-resolved": event(
            a, "symbol_errors", "warning", T0 - 5 * H, resolved=T0 - 4 * H, reason="clear for 3 polls"
        ),
        "degraded": event(a, "link_degraded", "critical", T0 - 3 * H, reason="1X where 4X expected"),
        "tie-1": event(b, "down", "critical", T0 - 2 * H),
        "tie-2": event(b, "congestion", "warning", T0 - 2 * H),
        "recent-resolved": event(b, "flapping", "info", T0 - H, resolved=T0 - H / 2, reason="clear for 3 polls"),
    }
    return {name: e.pk for name, e in made.items()}


def ids(body: dict) -> list[int]:
    return [e["id"] for e in body["events"]]


def test_events_list_open_and_resolved_newest_first(each_db, api, history):
    body = api.json("/api/v1/events")
    h = history
    assert ids(body) == [h["recent-resolved"], h["tie-2"], h["tie-1"], h["degraded"], h["old-resolved"]]
    assert body["next"] is None
    resolved = body["events"][0]
    assert resolved["open"] is False and resolved["resolved_at"] == "2026-03-01T11:30:00Z"
    assert resolved["reason"] == "clear for 3 polls"
    degraded = body["events"][3]
    assert degraded["open"] is True and degraded["resolved_at"] is None
    assert (degraded["node"], degraded["device"], degraded["port"]) == ("cn001", "mlx5_0", 1)
    assert degraded["port_url"] == "/api/v1/ports/cn001/mlx5_0/1"
    assert degraded["opened_at"] == "2026-03-01T09:00:00Z" and degraded["reason"] == "1X where 4X expected"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"open": "true"}, ["tie-2", "tie-1", "degraded"]),
        ({"open": "false"}, ["recent-resolved", "old-resolved"]),
        ({"severity": "critical"}, ["tie-1", "degraded"]),
        ({"node": "cn001"}, ["degraded", "old-resolved"]),
        ({"kind": "down"}, ["tie-1"]),
        ({"since": "2026-03-01T08:30:00Z"}, ["recent-resolved", "tie-2", "tie-1", "degraded"]),
        ({"since": "2026-03-01T11:45:00Z"}, ["tie-2", "tie-1", "degraded"]),
        ({"open": "true", "severity": "warning", "node": "cn002"}, ["tie-2"]),
        ({"node": "cn404"}, []),
    ],
    ids=["open", "resolved", "severity", "node", "kind", "since", "since: only open left", "combined", "no node"],
)
def test_events_filters(each_db, api, history, query, expected):
    assert ids(api.json("/api/v1/events", query)) == [history[name] for name in expected]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"open": "yes please"}, "open"),
        ({"severity": "CRITICAL"}, "severity"),
        ({"severity": "fatal"}, "severity"),
        ({"since": "last week"}, "since"),
        ({"limit": "1001"}, "limit"),
        ({"cursor": "abc"}, "cursor"),
        ({"sort": "oldest"}, "sort"),
    ],
)
def test_bad_event_filters_are_400s_naming_the_parameter(each_db, api, history, query, parameter):
    assert api.json("/api/v1/events", query, status=400)["error"].startswith(f"{parameter}: ")


def test_events_are_paged_by_cursor_through_ties_and_new_arrivals(each_db, api, history):
    first = api.json("/api/v1/events", {"limit": 2})
    assert ids(first) == [history["recent-resolved"], history["tie-2"]]
    # An event arriving while a client pages must not shift the later pages.
    event(port("cn001", "hfi1_0", 1), "down", "critical", T0)
    second = api.json(first["next"])
    third = api.json(second["next"])
    assert ids(second) == [history["tie-1"], history["degraded"]]
    assert ids(third) == [history["old-resolved"]] and third["next"] is None


def test_the_next_link_keeps_the_filters(each_db, api, history):
    first = api.json("/api/v1/events", {"open": "true", "limit": 1})
    assert first["next"].startswith("/api/v1/events?open=true&limit=1&cursor=")
    rest = []
    page = first
    while page["next"]:
        page = api.json(page["next"])
        rest += ids(page)
    assert rest == [history["tie-1"], history["degraded"]]


def test_event_detail_and_404(each_db, api, history):
    body = api.json(f"/api/v1/events/{history['degraded']}")
    assert body["kind"] == "link_degraded" and body["url"] == f"/api/v1/events/{history['degraded']}"
    assert api.json("/api/v1/events/999999", status=404) == {"error": "no event 999999"}


def test_events_the_health_engine_opens_and_resolves_are_served_with_reasons(each_db, api, tmp_path):
    pytest.importorskip("fabricweb.health.engine.engine", reason="the health engine is not in this tree yet")
    fab = SimFabric(tmp_path, 2)
    fab.poll()
    fab.fabric.add_fault("cn002/mlx4_0/1:down")
    fab.poll()

    down = api.json("/api/v1/events", {"open": "true", "kind": "down"})["events"]
    assert [(e["node"], e["device"], e["port"], e["severity"]) for e in down] == [("cn002", "mlx4_0", 1, "critical")]
    assert "down" in down[0]["message"]

    fab.fabric.clear_faults()
    for _ in range(6):
        fab.poll()
    resolved = api.json(f"/api/v1/events/{down[0]['id']}")
    assert resolved["open"] is False and resolved["resolved_at"] and resolved["reason"]
    assert not api.json("/api/v1/events", {"open": "true", "kind": "down"})["events"]
