"""Covers fabricweb/isotime.py, fabricweb/dashboard/views/port.py; through them fabricweb/dashboard/series.py,
fabricweb/dashboard/timerange.py, fabricweb/dashboard/views/common.py.

A new port's charts: a port monitored for a minute gets a time axis fitted to its data and says
since when it is monitored; a 24 h or 7 d chart's raw tail begins at its first sample, never at a date before
monitoring began; a custom range keeps the axis asked for; raw counters read with thousands separators. On
SQLite and PostgreSQL, through the real ingest."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from fabricweb.inventory.models import Port
from fabricweb.isotime import iso
from tests.api.api_support import SimFabric

SERIES = "/ports/cn001/mlx5_0/1/series"


@pytest.fixture
def new_port(each_db, tmp_path) -> Port:
    """cn001 mlx5_0/1, polled every 10 s for its first minute (until now)."""
    fab = SimFabric(tmp_path / "sim", 1, start=timezone.now() - timedelta(seconds=60))
    for _ in range(6):
        fab.poll()
    return Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)


@pytest.mark.parametrize("named", ["1h", "24h", "7d"])
def test_it_fits_the_time_axis_to_a_port_monitored_for_a_minute(viewer, new_port, named):
    s = viewer.get(SERIES, {"range": named}).json()
    assert s["port_monitored_since"] == min(s["t"][0], iso(new_port.first_seen_at))  # its first sample
    # Not an hour or a week with a sliver of data at its edge: the axis is the port's minute, its data in it.
    since, until = (datetime.fromisoformat(s[k]) for k in ("axis_since", "until"))
    assert timedelta(minutes=1) <= until - since < timedelta(minutes=1, seconds=30)
    assert s["axis_since"] <= s["t"][0] and s["t"][-1] <= s["until"] and len(s["t"]) == 6


@pytest.mark.parametrize("named", ["24h", "7d"])
def test_it_starts_the_raw_tail_at_the_first_sample_not_before_monitoring_began(viewer, new_port, named):
    s = viewer.get(SERIES, {"range": named}).json()
    assert s["resolution"] == "5-minute" and s["rolled"] is False  # too new for a rollup
    assert s["raw_since"] == s["t"][0] > s["since"]


def test_it_keeps_the_axis_asked_for_in_a_custom_range(viewer, new_port):
    now = timezone.now()
    since = (now - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%MZ")
    s = viewer.get(SERIES, {"from": since}).json()
    assert s["axis_since"] == s["since"] < iso(new_port.first_seen_at)


def test_it_writes_raw_counters_with_thousands_separators(viewer, new_port):
    response = viewer.get("/ports/cn001/mlx5_0/1/")
    data = re.search(r"<tr><th>port_rcv_data</th><td>([^<]+)</td></tr>", response.content.decode())[1]
    assert data == f"{dict(response.context['counters'])['port_rcv_data']:,}" and "," in data
