"""Covers fabricweb/dashboard/views/search.py, fabricweb/dashboard/finder.py, static/dashboard/.

Finding things in Debian's Chromium (Playwright), one `manage.py runserver` on a SQLite copy of the test
database: `/` goes to the search box (not while typing in a field), a search lands on the port, a click on a
column's header sorts the rows (numbers with their units as numbers, blanks last, aria-sort said), and the
pages log no console error."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
WAIT_MS = 20_000
FOCUSED_NAME = "document.activeElement && document.activeElement.name"
# A table of mixed units, added to a page as the server would send one; live.js's refresh event enhances it.
UNITS_TABLE = """() => { const t = document.createElement("table"); t.id = "units";
  t.innerHTML = "<thead><tr><th>port</th><th>rate</th></tr></thead><tbody>" +
    [["a", "2 Gb/s"], ["b", "no link"], ["c", "900 Mb/s"], ["d", "10 Gb/s"], ["e", ""], ["f", "2 Gb/s"]]
      .map(r => "<tr><td>" + r[0] + "</td><td>" + r[1] + "</td></tr>").join("") + "</tbody>";
  document.querySelector("main").appendChild(t); document.dispatchEvent(new CustomEvent("fabric:refreshed")); }"""


@pytest.fixture
def server(tmp_path):
    """(base URL, the server's SQLite file): 3 polled nodes, cn002 mlx4_0/1 trained at 1X, and a superuser."""
    fab = SimFabric(tmp_path / "sim", 3, start=timezone.now() - timedelta(minutes=1))
    fab.poll()
    fab.fabric.add_fault("cn002/mlx4_0/1:width=1X")
    fab.poll()
    fab.poll()
    make_superuser("olga")
    with served_copy(tmp_path) as served:
        yield served


def column(page, table: str, index: int) -> list[str]:
    return page.locator(f"{table} tbody tr td:nth-child({index})").all_inner_texts()


def test_slash_search_and_sortable_headers_in_chromium(server):
    base, _db = server
    with chromium_browser() as browser:
        console: list[str] = []
        page = watched_page(browser, console, viewport={"width": 1400, "height": 1000})
        log_in(page, base, "olga")

        # `/` in a field is a character; elsewhere it goes to the search box, typing nothing into it.
        page.fill("form.filters input[name=node]", "cn")
        page.keyboard.press("/")
        assert page.input_value("form.filters input[name=node]") == "cn/"
        page.locator("h1").click()
        page.keyboard.press("/")
        assert page.evaluate(FOCUSED_NAME) == "q" and page.input_value("form.search input[name=q]") == ""

        # A port's label finds it: the one hit is its page.
        page.keyboard.type("CN002 mlx4_0/1")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/ports/cn002/mlx4_0/1/")

        # A part of a name lists the nodes; the name's header sorts them, again to reverse.
        page.goto(f"{base}/search/?q=cn00")
        assert column(page, "table.search-results", 2) == ["cn001", "cn002", "cn003"]
        header = page.locator("table.search-results th", has_text="name")
        header.locator("button.sort-h").click()
        assert header.get_attribute("aria-sort") == "ascending"
        header.locator("button.sort-h").click()
        assert header.get_attribute("aria-sort") == "descending"
        assert column(page, "table.search-results", 2) == ["cn003", "cn002", "cn001"]

        # The node's port table by rate: 40 Gb/s before 10 Gb/s, descending.
        page.goto(f"{base}/nodes/cn002/")
        table = page.locator("table.ibstat").filter(has_text="mlx4_0/1")
        rate = table.locator("th", has_text="rate").locator("button")
        rate.click()
        rate.click()
        assert table.locator("tbody tr td:first-child").all_inner_texts() == ["mlx4_0/2", "mlx4_0/1"]

        # Units are read as numbers (900 Mb/s < 2 Gb/s < 10 Gb/s), words after them, blanks last, ties stable.
        page.evaluate(UNITS_TABLE)
        page.locator("#units th", has_text="rate").locator("button").click()
        assert column(page, "#units", 1) == ["c", "a", "f", "d", "b", "e"]
        page.locator("#units th", has_text="rate").locator("button").click()
        assert column(page, "#units", 1)[:4] == ["e", "b", "d", "a"]

        page.goto(f"{base}/events/?status=all")
        page.locator("table.events th button.sort-h").first.wait_for(timeout=WAIT_MS)
        assert console == []
