"""Covers fabricweb/isotime.py, fabricweb/telemetry/history/rollup.py, fabricweb/dashboard/views/port.py.

A port's chart series on SQLite and PostgreSQL: units an operator reads (Gb/s, pkt/s), the resolution each
range draws, a 24 h range that reaches now through the raw samples not yet rolled up, an old range that says
since when the fabric is monitored, and custom from/to ranges, bad ones answered with a message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from fabricweb.isotime import iso
from fabricweb.telemetry.history.rollup import rollup
from fabricweb.telemetry.models import NodePoll, PortRollup
from tests.api.api_support import SimFabric

SERIES = "/ports/cn001/mlx5_0/1/series"
PAGE = "/ports/cn001/mlx5_0/1/"


def test_throughput_is_in_gigabits_per_second_and_packets_in_packets_per_second(viewer, faulty):
    s = viewer.get(SERIES, {"range": "1h"}).json()
    assert s["units"] == {"throughput": "Gb/s", "packets": "pkt/s", "errors": "errors/h", "congestion": "%"}
    assert s["rx_gbps"][0] is None and s["rx"][0] is None  # the first poll has no delta: a gap
    for rx, gbps in zip(s["rx"][1:], s["rx_gbps"][1:], strict=True):
        assert gbps == pytest.approx(rx * 8 / 1e9) and gbps > 0
    assert all(v > 0 for v in s["rx_pps"][1:])
    assert s["link_gbps"][-1] == 200.0 and s["link_name"][-1] == "4X HDR"  # the capacity line, where it is up


def test_a_port_down_since_its_first_poll_has_no_capacity_anywhere_in_its_series(viewer, faulty):
    s = viewer.get("/ports/cn003/mlx5_1/1/series", {"range": "1h"}).json()
    assert s["link_gbps"][-2:] == [None, None]  # the two polls since it went down: no capacity drawn
    assert s["link_gbps"][1] is not None  # before, while it was up: its trained rate


def test_the_error_counters_come_in_four_groups_with_the_counting_ones_first(viewer, each_db, tmp_path):
    fab = SimFabric(tmp_path / "sim", 1, start=timezone.now() - timedelta(minutes=1))
    fab.fabric.add_fault("cn001/mlx5_0/1:symbol-errors=5/s", "cn001/mlx5_0/1:discards=2/s")
    for _ in range(3):
        fab.poll()
    groups = viewer.get(SERIES, {"range": "1h"}).json()["error_groups"]
    titles = [g["title"] for g in groups]
    assert titles == ["Symbol and link errors", "Receive errors", "Discards", "Link events"]
    names = [c["name"] for g in groups for c in g["counters"]]
    assert len(names) == len(set(names)) == 12 and "VL15_dropped" in names
    symbol, _, discards, _ = groups
    assert symbol["counters"][0] == {"column": "symbol_error", "name": "symbol_error", "nonzero": True, "slot": 0}
    assert discards["counters"][0]["name"] == "port_xmit_discards" and discards["counters"][0]["nonzero"]
    for group in groups:
        flags = [c["nonzero"] for c in group["counters"]]
        assert flags == sorted(flags, reverse=True), group  # the counting ones first


def test_each_range_says_the_resolution_it_draws(viewer, faulty):
    def resolution(**query):
        s = viewer.get(SERIES, query).json()
        return s["resolution"], s["source"]

    assert resolution(range="1h") == ("raw", "raw samples")
    assert resolution(range="24h") == ("5-minute", "5-minute rollups")
    assert resolution(range="30d") == ("hourly", "1-hour rollups")
    now = timezone.now()
    assert resolution(**{"from": iso(now - timedelta(hours=2))})[0] == "raw"
    # Raw samples are kept 48 h: an hour three days ago is drawn from the 5-minute rollups.
    three_days = now - timedelta(days=3)
    assert resolution(**{"from": iso(three_days), "to": iso(three_days + timedelta(hours=1))})[0] == "5-minute"
    assert resolution(**{"from": iso(now - timedelta(days=20))})[0] == "hourly"


def test_a_24h_range_reaches_now_through_the_raw_samples_past_the_last_rollup(viewer, each_db, tmp_path, settings):
    settings.FABRIC_POLL_INTERVAL = 60
    now = timezone.now()
    fab = SimFabric(tmp_path / "sim", 1, start=now - timedelta(minutes=21))
    for _ in range(21):
        fab.poll(seconds=60)
    rollup(now=now)
    last_bucket = PortRollup.objects.filter(period_s=PortRollup.FIVE_MINUTES).latest("bucket").bucket
    newest = NodePoll.objects.latest("ts").ts
    s = viewer.get(SERIES, {"range": "24h"}).json()
    tail = iso(last_bucket + timedelta(minutes=5))
    assert s["resolution"] == "5-minute" and s["raw_since"] == tail
    assert iso(last_bucket) in s["t"] and s["t"][-1] == iso(newest) and newest > last_bucket + timedelta(minutes=5)
    raw = [t for t in s["t"] if t >= tail]
    assert len(raw) >= 2 and all(s["rx_gbps"][s["t"].index(t)] for t in raw)
    assert None not in s["rx_gbps"][s["t"].index(iso(last_bucket)) :]  # no gap drawn where the tail joins


def test_a_range_older_than_the_first_data_says_since_when_the_fabric_is_monitored(viewer, faulty):
    first = NodePoll.objects.earliest("ts").ts
    s = viewer.get(SERIES, {"from": "2000-01-01T00:00Z", "to": "2000-01-02T00:00Z"}).json()
    assert s["t"] == [] and s["since"] == "2000-01-01T00:00:00Z" and s["until"] == "2000-01-02T00:00:00Z"
    assert s["message"] == f"no data in this range: monitored since {first:%Y-%m-%d %H:%M} UTC"
    assert s["monitored_since"] == iso(first)
    assert viewer.get(SERIES, {"range": "1h"}).json()["message"] is None
    html = viewer.text(PAGE, {"from": "2000-01-01T00:00", "to": "2000-01-02T00:00"})
    assert "from=2000-01-01T00%3A00%3A00Z&amp;to=2000-01-02T00%3A00%3A00Z" in html  # what the charts will ask


def test_from_and_to_are_read_as_utc_times_and_to_is_at_most_now(viewer, faulty):
    naive = viewer.get(SERIES, {"from": "2026-01-02T03:04", "to": "2026-01-02T04:04"}).json()
    assert naive["range"] == "custom"
    assert (naive["since"], naive["until"]) == ("2026-01-02T03:04:00Z", "2026-01-02T04:04:00Z")
    two_hours = viewer.get(SERIES, {"from": "2026-01-02T01:00Z", "to": "2026-01-02T05:04:00+02:00"}).json()
    assert (two_hours["since"], two_hours["until"]) == ("2026-01-02T01:00:00Z", "2026-01-02T03:04:00Z")
    before = timezone.now()
    ahead = viewer.get(SERIES, {"from": iso(before - timedelta(minutes=30)), "to": "2999-01-01T00:00Z"}).json()
    until = datetime.fromisoformat(ahead["until"])
    assert before <= until <= timezone.now() and ahead["message"] is None and len(ahead["t"]) == 4
    open_ended = viewer.get(SERIES, {"from": iso(before - timedelta(minutes=30))}).json()
    assert before <= datetime.fromisoformat(open_ended["until"]).astimezone(UTC) <= timezone.now()


BAD = [
    ({"from": "yesterday"}, "from: expected an ISO time such as 2026-12-02T01:33Z (UTC)"),
    ({"from": "2026-13-45T00:00"}, "from: expected an ISO time"),
    ({"from": "2026-01-01T00:00", "to": "soon"}, "to: expected an ISO time"),
    ({"from": "2" * 500}, "from: expected an ISO time"),
    ({"to": "2026-01-01T00:00"}, "from: missing"),
    ({"from": "2026-01-02T00:00", "to": "2026-01-01T00:00"}, "to: must be at least 1 minute after from"),
    ({"from": "2999-01-01T00:00"}, "from: 2999-01-01 00:00 UTC is in the future"),
    ({"from": "2020-01-01T00:00", "to": "2026-01-01T00:00"}, "from/to: at most 366 days apart"),
    ({"range": "forever"}, "range: expected one of 1h, 6h, 24h, 7d, 30d"),
    # Year 1 with an offset east of UTC, and year 9999 west of it: past datetime's range once made UTC.
    ({"from": "0001-01-01T00:00+05:00", "to": "0001-01-02T00:00+05:00"}, "from: 0001-01-01T00:00+05:00 is out of"),
    ({"from": "2026-01-01T00:00", "to": "9999-12-31T23:00-05:00"}, "to: 9999-12-31T23:00-05:00 is out of the range"),
]


def test_a_bad_from_or_to_is_answered_with_a_message_not_a_server_error(viewer, faulty):
    for query, words in BAD:
        error = viewer.get(SERIES, query, status=400).json()["error"]
        assert error.startswith(words), (query, error)
        page = viewer.get(PAGE, query, status=400)
        html = page.content.decode()
        assert f"{words}" in html and "showing 1h" in html, query
        assert 'id="chart-traffic"' in html and "series?range=1h" in html  # the default range is still drawn
