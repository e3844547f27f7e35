"""Covers fabricweb/dashboard/newness.py.

The wall and the overview with 30 open problems in Debian's Chromium (Playwright) at 1920, 2560 and 3840 px
wide: the wall shows every problem or counts those it does not show ("+N more", in large type),
never cuts a row mid-line, shows the new ones first and a bigger screen shows more rows, not bigger ones;
the overview lists all 30, newest first on request, and its port tiles sum to the total."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from fabricweb.dashboard import newness
from fabricweb.inventory.models import Port
from tests.api.api_support import SimFabric, event
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser

pytestmark = pytest.mark.django_db
SIZES = [(1920, 1080), (2560, 1440), (3840, 2160)]
PROBLEMS = 30
NEW = 4  # the newest, opened within newness.NEW_FOR
KINDS = ["symbol_errors", "rcv_errors", "degraded", "xmit_discards", "flapping"]
# What the wall's list holds on the screen: each row drawn, where it ends, and the "+N more" line.
WALL_STATE = """() => {
  const list = document.querySelector(".wall-problems"), bottom = list.getBoundingClientRect().bottom;
  const rows = [...list.querySelectorAll("li[data-event]")];
  const shown = rows.filter(r => getComputedStyle(r).display !== "none");
  const more = document.querySelector(".wall-more");
  const moreBox = more.getBoundingClientRect();
  return {
    shown: shown.map(r => parseInt(r.dataset.event, 10)),
    cut: shown.filter(r => r.getBoundingClientRect().bottom > bottom + 1).length,
    more: more.hidden ? 0 : parseInt(more.querySelector(".n").textContent.replace(/,/g, ""), 10),
    moreFits: more.hidden || moreBox.bottom <= innerHeight,
    morePx: more.hidden ? 0 : parseFloat(getComputedStyle(more.querySelector("b")).fontSize),
    rowPx: parseFloat(getComputedStyle(shown[0]).fontSize),
    scroll: [document.documentElement.scrollWidth, document.documentElement.scrollHeight],
  };
}"""


def _message(p: Port, i: int) -> str:
    """A problem's sentence as long as the engine's (150-250 characters), so that rows wrap as they do."""
    name = f"{p.device.node.name} {p.device.name}/{p.number}"
    return (
        f"{name}: {i + 3} symbol errors/h over the last 10 min (threshold 2/h), link trained at 40 Gb/s (4X QDR)"
        f" as expected; the far end is leaf01 port {i + 1}: check the cable and the transceiver"
    )


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory):
    """(base URL, every open problem in the wall's order): 10 polled hosts, 30 problems on their ports,
    NEW of them opened in the last 2 minutes, the others 10 min to 3 h ago; a third critical."""
    tmp = tmp_path_factory.mktemp("wall30")
    with contextlib.ExitStack() as stack:
        with django_db_blocker.unblock():
            fab = SimFabric(tmp / "sim", 10, start=timezone.now() - timedelta(minutes=1))
            fab.poll()
            fab.poll()
            ports = list(Port.objects.filter(device__node__kind="host").select_related("device__node").order_by("pk"))
            now = timezone.now()
            events = []
            for i in range(PROBLEMS):
                minutes = 0.3 * (i + 1) if i < NEW else 10 + 6 * i
                severity = "critical" if i % 3 == 0 else "warning"
                p = ports[i % len(ports)]
                at = now - timedelta(minutes=minutes)
                events.append(event(p, KINDS[i % len(KINDS)], severity, at, message=_message(p, i)))
            order = [e.pk for e in newness.wall_order(events, now)]
            make_superuser("olga")
            base, _ = stack.enter_context(served_copy(tmp, FABRIC_POLL_INTERVAL="60"))
            call_command("flush", interactive=False, verbosity=0)  # the server has its copy
        yield base, order


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _page(browser, base: str, size: tuple[int, int], errors: list[str]):
    page = watched_page(browser, errors, viewport={"width": size[0], "height": size[1]})
    log_in(page, base, "olga")
    return page


def test_it_shows_or_counts_every_problem_on_the_wall_and_never_cuts_off_the_newest(browser, served):
    base, order = served
    errors: list[str] = []
    shown_at = {}
    for size in SIZES:
        page = _page(browser, base, size, errors)
        page.goto(f"{base}/wall/")
        state = page.evaluate(WALL_STATE)
        assert state["scroll"] == list(size), size  # one screen, no scrolling
        assert len(state["shown"]) + state["more"] == PROBLEMS, (size, state)
        assert state["cut"] == 0 and state["moreFits"], (size, state)  # no row cut mid-line
        # The rows shown are the head of the wall's order: the new ones first, what is left off the oldest.
        assert state["shown"] == order[: len(state["shown"])], size
        assert len(state["shown"]) > NEW, size
        if state["more"]:
            assert state["morePx"] >= 2 * state["rowPx"], size  # "+N more" in large type
            assert page.locator(".wall-more").inner_text().startswith(f"+{state['more']} more")
        shown_at[size[0]] = state
        page.context.close()
    assert shown_at[1920]["more"] > 0  # 30 long problems do not fit 1080 px: counted, not hidden
    assert errors == []


def test_it_uses_a_bigger_wall_for_more_rows_not_bigger_ones(browser, served):
    base, _ = served
    errors: list[str] = []
    states = {}
    for size in SIZES[1:]:
        page = _page(browser, base, size, errors)
        page.goto(f"{base}/wall/")
        states[size[0]] = page.evaluate(WALL_STATE)
        page.context.close()
    assert states[3840]["rowPx"] == states[2560]["rowPx"]
    assert len(states[3840]["shown"]) > len(states[2560]["shown"])
    assert errors == []


def test_it_marks_the_new_problems_on_the_wall_and_colours_a_flapping_host_apart(browser, served):
    base, order = served
    errors: list[str] = []
    page = _page(browser, base, SIZES[0], errors)
    page.goto(f"{base}/wall/")
    new_rows = page.locator(".wall-problems li.is-new")
    assert new_rows.count() == NEW
    assert [int(x) for x in new_rows.evaluate_all("rows => rows.map(r => r.dataset.event)")] == order[:NEW]
    colour = "el => getComputedStyle(el).backgroundColor"
    legend = {
        h: page.locator(f".wall-legend .entry[data-health={h}] .tile").evaluate(colour)
        for h in ("up", "flapping", "erroring", "degraded", "down")
    }
    assert len(set(legend.values())) == len(legend)  # each state its own colour
    flapping_tile = page.locator(".wall-map .tile.flapping").first
    assert flapping_tile.evaluate(colour) == legend["flapping"] != legend["up"]
    healthy = page.locator("#wall-healthy").evaluate("el => getComputedStyle(el).borderLeftColor")
    assert healthy != "rgb(102, 187, 106)"  # not the green of all-up while 30 problems are open
    page.context.close()
    assert errors == []


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_it_lists_every_problem_on_the_overview_newest_first_and_its_counts_sum_to_the_total(browser, served, size):
    base, order = served
    errors: list[str] = []
    page = _page(browser, base, size, errors)
    assert page.locator("#live-problems h2").inner_text() == f"Problems ({PROBLEMS} open)"
    assert page.locator("#live-problems li[data-event]").count() == PROBLEMS
    parts = page.locator("#live-counts [data-part] b").all_inner_texts()
    assert sum(int(n) for n in parts) == int(page.locator("#count-ports").inner_text())
    page.goto(f"{base}/?sort=newest")
    rows = page.locator("#live-problems li[data-event]")
    ids = [int(x) for x in rows.evaluate_all("rows => rows.map(r => r.dataset.event)")]
    assert ids[:NEW] == order[:NEW]  # the newest first
    assert [rows.nth(i).locator(".new").count() for i in range(NEW + 1)] == [1] * NEW + [0]
    page.context.close()
    assert errors == []


def test_it_counts_the_rows_again_when_the_screen_changes_size(browser, served):
    base, order = served
    errors: list[str] = []
    page = _page(browser, base, SIZES[2], errors)
    page.goto(f"{base}/wall/")
    big = page.evaluate(WALL_STATE)
    page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
    drawn = "n => document.querySelectorAll('.wall-problems li[data-event]:not([style*=none])').length < n"
    page.wait_for_function(drawn, arg=len(big["shown"]))
    small = page.evaluate(WALL_STATE)
    assert len(small["shown"]) + small["more"] == PROBLEMS and small["cut"] == 0
    assert small["shown"] == order[: len(small["shown"])]
    page.context.close()
    assert errors == []
