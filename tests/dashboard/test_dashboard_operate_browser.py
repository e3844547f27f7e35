"""Covers fabricweb/inventory/portfacts/, fabricweb/dashboard/views/port.py.

The overview in Debian's Chromium (Playwright) while polls come in: a flapping port keeps one mark and the
counts hold across 5 polls, a PCIe problem marks its HCA's port cells, "Silence this" for 1 h from a
problem row shows on the row, and the browser logs no error. One server (`manage.py runserver` on a
SQLite copy of the test database); the polls are stored in that copy, between page loads, by the real
ingest and health engine."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections
from django.utils import timezone

from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port
from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
WAIT_MS = 20_000
FLAPPING = 'a.c[href="/ports/cn003/mlx5_1/1/"]'
PCIE = 'a.c[href^="/ports/cn001/mlx5_0/"]'


@contextlib.contextmanager
def stored_in(db: Path):
    """Django's default connection on the server's SQLite file for the block: ingest writes there."""
    original = connections["default"]
    copy = original.__class__({**original.settings_dict, "NAME": str(db)}, "default")
    connections["default"] = copy
    try:
        yield
    finally:
        copy.close()
        connections["default"] = original


@pytest.fixture
def served(tmp_path):
    """(base URL, the server's SQLite file, the fabric): 3 nodes, cn003 mlx5_1/1 flapping (its event open),
    cn001 mlx5_0's PCIe link too slow for its port; live refresh slower than the test (it reloads itself)."""
    fab = SimFabric(tmp_path / "sim", 3, start=timezone.now() - timedelta(minutes=2))
    fab.poll()
    fab.poll()
    fab.fabric.add_fault("cn003/mlx5_1/1:flap", "cn001/mlx5_0:pcie=GEN3x8")
    for _ in range(4):
        fab.poll()
    make_superuser("olga")
    with served_copy(tmp_path, FABRIC_POLL_INTERVAL="60") as (base, db):
        yield base, db, fab


def test_the_grid_holds_its_marks_across_polls_and_a_problem_row_silences_for_an_hour(served):
    base, db, fab = served
    with chromium_browser() as browser:
        errors: list[str] = []
        page = watched_page(browser, errors, viewport={"width": 1400, "height": 1000})
        log_in(page, base, "olga")

        # 5 polls, each stored before a page load: one mark, one count, whether the port is down or up.
        seen, up_at_poll = [], set()
        for _ in range(5):
            with stored_in(db):
                fab.poll()
                port = Port.objects.get(device__node__name="cn003", device__name="mlx5_1", number=1)
                up_at_poll.add(portfacts.is_up(port))
            page.goto(f"{base}/")
            cell = page.locator(FLAPPING)
            seen.append(
                (
                    cell.get_attribute("class"),
                    cell.inner_text(),
                    page.locator("#count-flapping").inner_text(),
                    page.locator("#count-down").inner_text(),
                )
            )
        assert seen == [("c flapping", "↕", "1", "0")] * 5, seen
        assert up_at_poll == {True, False}  # the server's copy saw the port down at some polls, up at others

        # The PCIe problem is in the list, and its HCA's port cells say so.
        cells = page.locator(PCIE)
        assert cells.count() >= 1
        for i in range(cells.count()):
            assert cells.nth(i).get_attribute("class") == "c pcie_limited"
            assert "PCIe link too slow for the port" in cells.nth(i).get_attribute("title")
        row = page.locator("#live-problems li", has_text="cn001 mlx5_0: PCIe")
        assert row.count() == 1

        # Silence this, 1 h, from the row: back on the overview, the row says until when and by whom.
        row.locator("summary", has_text="Silence this").click()
        row.locator("button", has_text="1 h").click()
        page.wait_for_url(f"{base}/")
        row = page.locator("#live-problems li", has_text="cn001 mlx5_0: PCIe")
        silenced = row.locator(".tag.silenced")
        silenced.wait_for(timeout=WAIT_MS)
        assert silenced.inner_text().startswith("silenced until ") and silenced.inner_text().endswith(" UTC by olga")
        assert row.locator("summary", has_text="Silence this").count() == 0
        assert "Silenced cn001 mlx5_0/* pcie until" in page.locator(".messages").inner_text()
        assert errors == [], errors
        page.context.close()
