"""Covers fabricweb/dashboard/models.py, fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/node.py,
fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/wall.py.

Every screen in Debian's Chromium (Playwright), on one `manage.py runserver` for the module: a phone at 390 px
scrolls no page sideways, the wall fills 1920x1080 to 3840x2160 with large type, the theme follows the
browser's preference and its toggle, a viewer refused an operator page is told why, a revoked wall link
says so on the wall, the favicon is served, and no page logs a console error."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.utils import timezone

from fabricweb.dashboard.models import WallLink
from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, server_password, watched_page
from tests.e2e.e2e_harness import chromium_browser

# So that pytest-django sets up the test database, which the module's server copies (its tests touch none).
pytestmark = pytest.mark.django_db
WAIT_MS = 20_000
PHONE = {"width": 390, "height": 844}
PAGES = ["/", "/events/", "/nodes/cn002/", "/ports/cn002/mlx4_0/1/"]
DARK_BG, LIGHT_BG = "rgb(18, 20, 23)", "rgb(247, 247, 245)"  # screens.css's and dashboard.css's --bg
# The smallest text on the wall: every element with a text node of its own that is drawn.
SMALLEST_TEXT = """() => {
  let smallest = Infinity, where = "";
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < smallest) { smallest = size; where = el.className || el.tagName; }
  }
  return [smallest, where];
}"""


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory):
    """(base URL, server's SQLite file, a live wall link's token): 3 polled hosts, cn002 mlx4_0/1 degraded
    (1X) and cn003 mlx5_1/1 down, the superuser olga and the viewer victor. The test database is emptied once
    the server has its copy."""
    tmp = tmp_path_factory.mktemp("screens")
    with contextlib.ExitStack() as stack:
        with django_db_blocker.unblock():
            fab = SimFabric(tmp / "sim", 3, start=timezone.now() - timedelta(minutes=1))
            fab.poll()
            fab.fabric.add_fault("cn002/mlx4_0/1:width=1X", "cn003/mlx5_1/1:down")
            fab.poll()
            fab.poll()
            make_superuser("olga")
            viewer = get_user_model().objects.create(username="victor", password=server_password())
            viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
            _, token = WallLink.issue("NOC left", "olga")
            base, db = stack.enter_context(served_copy(tmp, FABRIC_POLL_INTERVAL="1"))
            call_command("flush", interactive=False, verbosity=0)  # the server has its copy
        yield base, db, token


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


class Session:
    """One browser context, logged in, collecting the console's errors."""

    def __init__(self, browser, base: str, user: str | None = "olga", **options) -> None:
        self.base = base
        self.errors: list[str] = []
        self.page = watched_page(browser, self.errors, **options)
        self.context = self.page.context
        if user:
            log_in(self.page, base, user)

    def goto(self, path: str):
        return self.page.goto(f"{self.base}{path}")

    def background(self) -> str:
        return self.page.evaluate("getComputedStyle(document.body).backgroundColor")


@pytest.fixture
def session(browser, served):
    sessions: list[Session] = []

    def start(user: str | None = "olga", **options) -> Session:
        sessions.append(Session(browser, served[0], user, **options))
        return sessions[-1]

    yield start
    for s in sessions:
        s.context.close()


def test_no_page_scrolls_sideways_on_a_390_px_phone(session):
    phone = session(viewport=PHONE, is_mobile=True, has_touch=True)
    for path in PAGES:
        phone.goto(path)
        if path.startswith("/ports/"):
            phone.page.locator("#chart-traffic .main-svg").first.wait_for(timeout=WAIT_MS)
        width = phone.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1] == 390, (path, width)
    assert phone.errors == []


def test_the_wall_fills_a_2560x1440_screen_in_text_of_18_px_or_more(session):
    wall = session(viewport={"width": 2560, "height": 1440})
    wall.goto("/wall/")
    board = wall.page.locator("#live-wall").bounding_box()
    assert board["width"] > 0.8 * 2560
    smallest, where = wall.page.evaluate(SMALLEST_TEXT)
    assert smallest >= 18, where
    assert wall.page.locator(".wall-map .tile.down", has_text="cn003").count() == 1
    assert "cn003 mlx5_1/1" in wall.page.locator(".wall-problems").inner_text()
    assert wall.errors == []


@pytest.mark.parametrize("size", [(1920, 1080), (2560, 1440), (3840, 2160)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_wall_fits_its_screen_without_scrolling_and_its_type_grows_with_it(session, size):
    wall = session(viewport={"width": size[0], "height": size[1]})
    wall.goto("/wall/")
    scroll = wall.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert scroll == list(size)
    # Everything the wall shows is on the screen: the counts, the problems and the last tile of the map.
    for selector in (".wall-counts", ".wall-problems li", ".wall-map .tile >> nth=-1", ".wall-legend"):
        box = wall.page.locator(selector).first.bounding_box()
        assert box["y"] + box["height"] <= size[1] and box["x"] + box["width"] <= size[0], selector
    counts = wall.page.evaluate("parseFloat(getComputedStyle(document.querySelector('.wall-counts b')).fontSize)")
    assert counts >= size[0] * 0.02  # the counts' figures scale with the screen: about 3 % of its width
    assert wall.errors == []


def test_the_theme_follows_the_browsers_preference_and_the_toggle_keeps_its_choice(session):
    dark = session(color_scheme="dark", viewport={"width": 1280, "height": 800})
    dark.goto("/events/")
    assert dark.background() == DARK_BG
    dark.page.click("#theme-toggle")
    assert dark.background() == LIGHT_BG
    dark.goto("/")  # the choice is kept (localStorage), over the system's preference
    assert dark.background() == LIGHT_BG
    assert dark.page.locator("#theme-toggle").inner_text() == "Dark theme"
    dark.page.click("#theme-toggle")
    assert dark.background() == DARK_BG
    light = session(color_scheme="light")
    light.goto("/")
    assert light.background() == LIGHT_BG
    assert dark.errors == [] and light.errors == []


def test_a_viewer_sees_why_an_operator_page_is_refused_and_the_way_back(session):
    viewer = session("victor")
    response = viewer.page.goto(f"{viewer.base}/wall/links/", referer=f"{viewer.base}/events/")
    assert response.status == 403
    text = viewer.page.locator("main").inner_text()
    assert "Refused: operators only: acknowledge, silence and accept baselines." in text
    assert "victor, a viewer" in text
    viewer.page.click("text=Back to where you were")
    viewer.page.wait_for_url("**/events/")
    # The browser reports the refused page's own status, and nothing else.
    assert [e for e in viewer.errors if "403" not in e] == []


def test_a_wall_link_revoked_while_on_the_wall_says_so_not_logged_out(session, served):
    _, db, token = served
    screen = session(None, viewport={"width": 1920, "height": 1080})
    screen.goto(f"/wall/?token={token}")
    screen.page.locator(".wall-map .tile").first.wait_for(timeout=WAIT_MS)
    with sqlite3.connect(db, timeout=20) as server_db:  # as an operator's Revoke does
        server_db.execute(
            f"UPDATE {WallLink._meta.db_table} SET revoked_at = ?", [timezone.now().strftime("%Y-%m-%d %H:%M:%S")]
        )
    status = screen.page.locator("#status-line", has_text="this wall link was revoked on")
    status.wait_for(timeout=WAIT_MS)
    assert "logged out" not in status.inner_text()
    screen.goto(f"/wall/?token={token}")
    assert "This wall link was revoked" in screen.page.locator("h1").inner_text()


def test_the_favicon_is_served_and_linked(session):
    page = session(None)
    page.goto("/login/")
    href = page.page.get_attribute("link[rel=icon]", "href")
    response = page.context.request.get(f"{page.base}{href}")
    assert response.status == 200 and response.headers["content-type"].startswith("image/svg+xml")
    assert response.text().startswith("<svg")
    assert page.errors == []
