"""Covers fabricweb/api/views/samples.py.

GET /api/v1/ports/<node>/<device>/<port>/samples: deltas per poll, rates, windows and pages."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import T0, later, snapshot

URL = "/api/v1/ports/cn001/mlx5_0/1/samples"
SINCE = "2026-03-01T11:00:00Z"


@pytest.fixture
def polls(each_db) -> int:
    """Seven polls of the procfs tree 10 s apart; each moves 40 000 bytes in and 2 symbol errors."""
    base = snapshot()
    ingest_snapshot(base)
    for i in range(1, 7):
        ingest_snapshot(later(base, 10 * i, {"port_rcv_data": 40_000 * i, "symbol_error": 2 * i}))
    return 7


def test_samples_carry_deltas_and_rates_with_units_in_their_names(each_db, api, polls):
    body = api.json(URL, {"since": SINCE, "until": "2026-03-01T13:00:00Z"})

    assert (body["node"], body["device"], body["port"]) == ("cn001", "mlx5_0", 1)
    assert (body["since"], body["until"], body["next"]) == (SINCE, "2026-03-01T13:00:00Z", None)
    first, second = body["samples"][:2]
    # The first poll has no baseline: its deltas are unknown (null), never 0.
    assert first["ts"] == "2026-03-01T12:00:00Z" and first["interval_s"] is None
    assert first["rcv_bytes"] is None and first["rcv_bytes_per_second"] is None and first["symbol_error"] is None
    assert second["ts"] == "2026-03-01T12:00:10Z" and second["interval_s"] == 10.0
    assert second["rcv_bytes"] == 40_000 and second["rcv_bytes_per_second"] == 4_000.0
    assert second["xmit_bytes"] == 0 and second["xmit_bytes_per_second"] == 0.0  # known idle: a real 0
    assert second["symbol_error"] == 2 and second["link"]["name"] == "1X EDR"
    assert second["state_id"] == 4 and second["reset"] is False and second["capped"] is False
    assert len(body["samples"]) == polls


def test_the_window_is_since_inclusive_until_exclusive(each_db, api, polls):
    body = api.json(URL, {"since": "2026-03-01T12:00:10Z", "until": "2026-03-01T12:00:30Z"})
    assert [s["ts"] for s in body["samples"]] == ["2026-03-01T12:00:10Z", "2026-03-01T12:00:20Z"]


def test_a_time_without_offset_is_utc_and_other_offsets_are_converted(each_db, api, polls):
    naive = api.json(URL, {"since": "2026-03-01T12:00:50", "until": "2026-03-01T13:00:00"})
    offset = api.json(URL, {"since": "2026-03-01T13:00:50+01:00", "until": "2026-03-01T14:00:00+01:00"})
    last_two = ["2026-03-01T12:00:50Z", "2026-03-01T12:01:00Z"]
    assert [s["ts"] for s in naive["samples"]] == [s["ts"] for s in offset["samples"]] == last_two
    assert offset["since"] == "2026-03-01T12:00:50Z"


def test_the_default_window_is_the_last_hour(each_db, api, polls):
    # The fixture's polls are months old: nothing in the last hour.
    body = api.json(URL)
    assert body["samples"] == [] and body["next"] is None


def test_samples_are_paged_by_cursor_without_repeats_or_gaps(each_db, api, polls):
    seen, pages = [], 0
    body = api.json(URL, {"since": SINCE, "until": "2026-03-01T13:00:00Z", "limit": 3})
    while True:
        pages += 1
        seen += [s["ts"] for s in body["samples"]]
        if body["next"] is None:
            break
        assert "until=2026-03-01T13" in body["next"]  # the window stays pinned across pages
        body = api.json(body["next"])
    assert pages == 3 and len(seen) == len(set(seen)) == polls and seen == sorted(seen)


def test_a_page_is_bounded(each_db, api, polls):
    assert api.json(URL, {"since": SINCE, "limit": 5001}, status=400)["error"].startswith("limit: ")


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"since": "yesterday"}, "since: expected an ISO 8601 time"),
        ({"until": "2026-13-01T00:00:00Z"}, "until: expected an ISO 8601 time"),
        ({"since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"}, "since: is after until"),
        ({"cursor": "bm90IGEgY3Vyc29y"}, "cursor: not a cursor"),
        ({"cursor": "%%%"}, "cursor: not a cursor"),
    ],
)
def test_bad_window_values_are_400s_naming_the_parameter(each_db, api, polls, query, error):
    assert api.json(URL, query, status=400)["error"].startswith(error)


def test_samples_of_an_unknown_port_are_a_404(each_db, api, polls):
    assert api.json("/api/v1/ports/cn001/mlx5_0/7/samples", status=404)["error"] == "no port 7 on cn001 mlx5_0"


def test_a_counter_reset_is_flagged_not_a_negative_rate(each_db, api):
    base = snapshot()
    ingest_snapshot(later(base, 0, {"port_rcv_data": 10**9}))
    ingest_snapshot(later(base, 10, {"port_rcv_data": 4_000}))  # went down: reset
    body = api.json(URL, {"since": (T0 - timedelta(minutes=1)).isoformat()})
    last = body["samples"][-1]
    assert last["reset"] is True and (last["rcv_bytes"] is None or last["rcv_bytes"] >= 0)
