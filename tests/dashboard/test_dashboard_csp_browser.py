"""Covers fabricweb/inventory/models.py, fabricweb/dashboard/views/port.py.

The Content-Security-Policy in Debian's Chromium (Playwright): with scripts from our origin only, the port
page's plotly.js charts still draw, live refresh still swaps in what changed, and the browser reports no
violation; an inline script injected into the page does not run. The server is `manage.py runserver` on a
SQLite file copied from the test database (SQLite only: the policy is a header, the same on both)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest
from django.utils import timezone

from fabricweb.inventory.models import Port
from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import PASSWORD, make_superuser, served_copy
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
PORT_PAGE = "/ports/cn001/mlx5_0/1/"
WAIT_MS = 20_000
# Every violation the page sees, from before its first script runs (Playwright's init scripts are not the page's).
LISTEN = """document.addEventListener("securitypolicyviolation", function (e) {
  (window.__csp = window.__csp || []).push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});"""


@pytest.fixture
def server(tmp_path):
    """(base URL, the server's SQLite file): 2 polled nodes and a superuser, served with a 1 s poll."""
    fab = SimFabric(tmp_path / "sim", 2, start=timezone.now() - timedelta(minutes=1))
    for _ in range(3):
        fab.poll()
    make_superuser("olga")
    with served_copy(tmp_path, FABRIC_POLL_INTERVAL="1") as served:
        yield served


def test_charts_draw_and_live_refresh_updates_under_the_policy(server):
    base, db = server
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    with chromium_browser() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(LISTEN)
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        page.on("pageerror", lambda e: console.append(str(e)))

        response = page.goto(f"{base}/")
        assert "/login/" in page.url
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.fill("input[name=username]", "olga")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        page.locator("#live-grid a.c").first.wait_for(timeout=WAIT_MS)

        page.goto(f"{base}{PORT_PAGE}")
        # plotly.js drew every chart (its SVG), from the series fetched by charts.js.
        page.locator("#chart-traffic .main-svg").first.wait_for(timeout=WAIT_MS)
        assert page.locator("#charts .main-svg").count() >= 5
        assert "points since" in page.locator("#series-source").inner_text()

        # Live refresh (live.js, every FABRIC_POLL_INTERVAL = 1 s) swaps in what changed, with no reload.
        page.evaluate("window.__same_page = true")
        with sqlite3.connect(db, timeout=20) as server_db:  # as ingest would change it
            server_db.execute(f"UPDATE {Port._meta.db_table} SET lid = 4242 WHERE id = ?", [port.pk])
        page.locator("#live-port dd", has_text="4242 /").wait_for(timeout=WAIT_MS)
        assert page.evaluate("window.__same_page") is True
        assert page.locator("#chart-traffic .main-svg").count() >= 1

        violations = page.evaluate("window.__csp || []")
        assert violations == [] and not [m for m in console if "Content Security Policy" in m], (violations, console)

        # The policy is enforced: a script slipped into the page does not run, and the browser says why.
        ran = page.evaluate("""() => { const s = document.createElement("script");
            s.textContent = "window.__ran = 1"; document.body.appendChild(s); return window.__ran === 1; }""")
        assert ran is False
        page.wait_for_function("(window.__csp || []).length > 0", timeout=WAIT_MS)
        assert page.evaluate("window.__csp")[0].startswith("script-src")
        context.close()
