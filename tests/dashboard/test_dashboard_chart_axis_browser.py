"""Covers fabricweb/dashboard/views/port.py.

A port monitored for a minute in Debian's Chromium (Playwright), on `manage.py runserver` over a SQLite copy
of the test database: its charts' time axis spans its minute of data, not the hour or the week
asked for, and every caption says since when the port is monitored."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
PORT = "/ports/cn001/mlx5_0/1/"
WAIT_MS = 20_000
AXIS = "id => document.getElementById(id).layout.xaxis.range"


def _utc(text: str) -> datetime:
    """Plotly's axis end ("2026-12-06 12:48:18.09" or ISO with Z), as an aware UTC time."""
    return datetime.fromisoformat(text.replace("Z", "").replace(" ", "T") + "+00:00")


@pytest.mark.parametrize("named", ["1h", "7d"])
def test_it_fits_the_chart_axis_to_a_port_monitored_for_a_minute(tmp_path, named):
    fab = SimFabric(tmp_path / "sim", 1, start=timezone.now() - timedelta(seconds=60))
    for _ in range(6):
        fab.poll()
    make_superuser("olga")
    with served_copy(tmp_path) as (base, _), chromium_browser() as browser:
        console: list[str] = []
        page = watched_page(browser, console, viewport={"width": 1400, "height": 1000})
        log_in(page, base, "olga")
        page.goto(f"{base}{PORT}?range={named}")
        page.locator("#chart-link .main-svg").first.wait_for(timeout=WAIT_MS)
        for chart in ("chart-traffic", "chart-packets", "chart-errors-0", "chart-congestion", "chart-link"):
            start, end = (_utc(t) for t in page.evaluate(AXIS, chart))
            assert timedelta(minutes=1) <= end - start < timedelta(minutes=1, seconds=30), chart
        captions = page.locator("#charts figcaption").all_inner_texts()
        assert len(captions) == 5 and len(set(captions)) == 1
        monitored = rf"; this port is monitored since (\S+ \S+) UTC \(the {named} range starts before\)"
        said = re.search(monitored, captions[0])
        assert said and start - timedelta(minutes=1) <= _utc(said[1]) <= end, captions[0]
        if named == "7d":  # a rollup range of a port too new for a rollup: its raw samples, from its first
            assert ", raw samples from " in captions[0] and "(none rolled up into 5-minute rollups yet)" in captions[0]
        page.context.close()
        assert console == []
