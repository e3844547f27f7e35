"""Covers fabricweb/dashboard/views/port.py, fabricweb/dashboard/series.py.

The port page's charts in Debian's Chromium (Playwright), on one `manage.py runserver` over a SQLite copy of
the test database: throughput in Gb/s with the link's capacity only while it is up, the error counters in
grouped small charts, the congestion axis title, each chart's range and resolution caption, an old range's
message instead of an empty year-2000 axis, a range dragged on a chart or picked from/to that lands in the
URL (and survives a reload), and no console error on any of it."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone

from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
UP_PORT = "/ports/cn001/mlx5_0/1/"
DOWN_PORT = "/ports/cn001/mlx5_1/1/"
WAIT_MS = 20_000
TRACES = "id => document.getElementById(id).data.map(t => t.name)"
Y_TICKS = "() => Array.from(document.querySelectorAll('#charts .ytick text')).map(t => t.textContent)"


@pytest.fixture
def page_of(tmp_path):
    """A logged-in Chromium page on a server of 2 nodes polled 21, 11 and 1 minutes ago and now, cn001 mlx5_1/1
    down since before the first poll (and symbol errors on cn001 mlx5_0/1); and the console messages it logged."""
    fab = SimFabric(tmp_path / "sim", 2, start=timezone.now() - timedelta(minutes=31, seconds=10))
    fab.fabric.add_fault("cn001/mlx5_1/1:down", "cn001/mlx5_0/1:symbol-errors=3/s")
    for seconds in (600, 600, 600, 10):
        fab.poll(seconds=seconds)
    make_superuser("olga")
    with served_copy(tmp_path) as (base, _), chromium_browser() as browser:
        console: list[str] = []
        page = watched_page(browser, console, viewport={"width": 1400, "height": 1000})
        log_in(page, base, "olga")
        yield base, page, console
        page.context.close()


def _open(page, url: str) -> None:
    page.goto(url)
    page.locator("#chart-link .main-svg").first.wait_for(timeout=WAIT_MS)


def _captions(page) -> list[str]:
    return page.locator("#charts figcaption").all_inner_texts()


def test_the_port_charts_read_at_a_glance_and_their_range_shows_in_the_url(page_of):
    base, page, console = page_of
    _open(page, f"{base}{UP_PORT}")
    assert page.locator("#chart-traffic .g-ytitle").text_content() == "Gb/s"
    assert page.locator("#chart-packets .g-ytitle").text_content() == "pkt/s"
    assert page.locator("#chart-congestion .g-ytitle").text_content() == "% of link time lost to congestion"
    assert "link capacity (4X HDR)" in page.evaluate(TRACES, "chart-traffic")

    # The 12 error counters: 4 small charts of at most 4, distinct colours in each, the counting one first.
    groups = page.locator("#chart-errors .js-plotly-plot")
    assert groups.count() == 4
    assert page.locator("#chart-errors .gtitle").all_text_contents() == [
        "Symbol and link errors", "Receive errors", "Discards", "Link events"]  # fmt: skip
    for i in range(4):
        colours = page.evaluate(f"() => document.getElementById('chart-errors-{i}').data.map(t => t.line.color)")
        assert 2 <= len(colours) <= 4 and len(set(colours)) == len(colours), colours
    assert page.evaluate(TRACES, "chart-errors-0")[0] == "symbol_error"

    # Each chart says the range and the resolution it draws; no tick reads like an SI "m" (200m = 200 million?).
    captions = _captions(page)
    assert len(captions) == 5 and len(set(captions)) == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d to \d{4}-\d\d-\d\d \d\d:\d\d UTC, raw samples.*", captions[0])
    assert not [t for t in page.evaluate(Y_TICKS) if re.search(r"\d[mµn]$", t)]

    # A range dragged across the throughput chart (about 42 to 3 minutes ago): in the URL, drawn, and the same
    # after a reload.
    plot = page.locator("#chart-traffic .nsewdrag").first.bounding_box()
    y = plot["y"] + plot["height"] / 2
    page.mouse.move(plot["x"] + plot["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(plot["x"] + plot["width"] * 0.95, y, steps=8)
    page.mouse.up()
    page.wait_for_url(re.compile(r"from=.*&to="), timeout=WAIT_MS)
    query = parse_qs(urlparse(page.url).query)
    start, end = query["from"][0], query["to"][0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", start) and start < end
    caption = start[:16].replace("T", " ") + " to " + end[:16].replace("T", " ") + " UTC, raw samples"
    page.wait_for_function("c => document.querySelector('#charts figcaption').textContent.startsWith(c)", arg=caption)
    page.reload()
    page.locator("#chart-link .main-svg").first.wait_for(timeout=WAIT_MS)
    page.wait_for_function("c => document.querySelector('#charts figcaption').textContent.startsWith(c)", arg=caption)
    assert page.locator("input[name=from]").input_value() == start[:16]

    # From/to picked in the form: in the URL as well.
    page.fill("input[name=from]", "2000-01-01T00:00")
    page.fill("input[name=to]", "2000-01-02T00:00")
    page.click(".range-form button[type=submit]")
    page.wait_for_url(re.compile(r"from=2000-01-01T00%3A00&to=2000-01-02T00%3A00"), timeout=WAIT_MS)
    # An old range: its message, and no empty axis (Plotly's default one is in the year 2000).
    message = page.locator("#series-message")
    message.wait_for(state="visible", timeout=WAIT_MS)
    assert re.match(r"no data in this range: monitored since \d{4}-\d\d-\d\d \d\d:\d\d UTC", message.inner_text())
    assert page.locator("#charts .main-svg").count() == 0 and not page.locator("#charts").is_visible()

    # A port down since its first poll: no capacity line, and its empty charts' ticks are plain numbers.
    _open(page, f"{base}{DOWN_PORT}")
    assert not [n for n in page.evaluate(TRACES, "chart-traffic") if n.startswith("link capacity")]
    assert not [t for t in page.evaluate(Y_TICKS) if re.search(r"\d[mµn]$", t)]
    assert console == []
