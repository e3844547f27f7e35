"""Covers fabricweb/dashboard/grid.py, fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/node.py
(templates/dashboard/overview.html, port.html and node.html, static/dashboard/dashboard.css).

An agentless channel adapter as an operator sees it in Debian's Chromium (Playwright), on one `manage.py
runserver` for the module: a storage server's adapter that no agent reports, stored through the fabric
collector's ingest (two sweeps of a leaf and the adapter, its symbol errors rising), beside three polled hosts.
Its block is drawn among the hosts' with its "(CA)" mark; its port cell is erroring, in the legend's colour,
with a title in operator words; the cell opens its port page, which says the fabric collector reads it; the
node description, markup included, shows on its node page as text."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from collectors.mads import netfile
from collectors.mads.mad import NODE_TYPE_CA
from collectors.mads.pma import COUNTER_NAMES, SUPERSEDED
from collectors.mads.snapshot import to_dict
from fabricweb.fabric.ingest import ingest_fabric
from tests.api.api_support import SimFabric
from tests.dashboard.webserver_support import log_in, make_superuser, served_copy, watched_page
from tests.e2e.e2e_harness import chromium_browser
from tests.fabric.fabric_support import SweepBuilder, one_leaf_net

pytestmark = pytest.mark.django_db
# A leaf and a storage server's one-port adapter. No agent reports it: the hosts' adapters are not in the net,
# and its GUID is none of theirs (the simulator's start at 0x0c42a10300bcf003).
NET = one_leaf_net("nfs01 mlx5_0", "0x0c42a10300ab5001")
# As rdma-core writes it (`<host> <device>`), markup and an entity after (64 bytes at most, as NodeInfo's):
# the node is nfs01, its device mlx5_0.
DESCRIPTION = 'nfs01 mlx5_0 <script>alert(1)</script><b>b</b> &amp; "q"'

PORT = "/ports/nfs01/mlx5_0/1/"
CELL = f'.grid a.c[href="{PORT}"]'
STYLE = "(el, p) => getComputedStyle(el)[p]"


def _sweep(builder: SweepBuilder, at, symbol_errors: int) -> dict:
    """What the collector sends: the adapter's counters read too, as a poll naming it asks."""
    sweep = builder.sweep(at)
    for node in sweep.nodes:
        if node.node_type == NODE_TYPE_CA:
            values = {**dict.fromkeys(COUNTER_NAMES, 0), **dict.fromkeys(SUPERSEDED), "symbol_error": symbol_errors}
            node.ports[1].counters = values
    return to_dict(sweep)


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory):
    """The base URL: cn001-cn003 polled, nfs01's adapter swept twice a minute apart (500 symbol errors between),
    the superuser olga. The test database is emptied once the server has its copy."""
    tmp = tmp_path_factory.mktemp("adapter")
    with contextlib.ExitStack() as stack:
        with django_db_blocker.unblock():
            now = timezone.now()
            fab = SimFabric(tmp / "sim", 3, start=now - timedelta(minutes=1))
            fab.poll()
            fab.poll()
            builder = SweepBuilder(netfile.parse(NET), collector="fabric-test")
            ca = next(key for key, n in builder.nodes.items() if n.node_type == NODE_TYPE_CA)
            builder.nodes[ca] = replace(builder.nodes[ca], description=DESCRIPTION)
            ingest_fabric(_sweep(builder, now - timedelta(minutes=1), 0), now=now - timedelta(minutes=1))
            ingest_fabric(_sweep(builder, now, 500), now=now)
            make_superuser("olga")
            base, _ = stack.enter_context(served_copy(tmp, FABRIC_POLL_INTERVAL="60"))
            call_command("flush", interactive=False, verbosity=0)  # the server has its copy
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def logged_in(browser, served) -> dict:
    """olga's cookies, logged in once through the form (the server's password hash costs a second a login)."""
    errors: list[str] = []
    page = watched_page(browser, errors)
    log_in(page, served, "olga")
    state = page.context.storage_state()
    page.context.close()
    assert errors == []
    return state


@pytest.fixture
def page(browser, served, logged_in):
    """The overview as olga sees it at 1400 px, in a context of its own; console errors and dialogs noted."""
    errors: list[str] = []
    page = watched_page(browser, errors, viewport={"width": 1400, "height": 900}, storage_state=logged_in)
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(f"{served}/")
    yield page
    page.context.close()
    assert errors == []


def test_it_draws_the_adapters_block_among_the_hosts_marked_ca(page):
    names = page.locator(".grid .gnode > a.gn")
    assert names.all_inner_texts() == ["cn001", "cn002", "cn003", "nfs01 (CA)"]
    block = page.locator(".grid .gnode.ca")
    assert block.count() == 1
    title = block.locator("a.gn").get_attribute("title")
    assert title == "nfs01: CA, read by the fabric collector (no agent reports it)"
    host = page.locator(".grid .gnode:not(.ca)").first
    box, host_box = block.bounding_box(), host.bounding_box()
    assert box["height"] == host_box["height"] > 0 and box["width"] > 0  # a block as a host's, drawn
    assert block.evaluate(STYLE, "borderTopStyle") == "dotted" != host.evaluate(STYLE, "borderTopStyle")
    assert "a node marked (CA) is a channel adapter no agent reports" in page.locator("#live-grid .legend").inner_text()


def test_its_port_cell_is_erroring_in_the_legends_colour_with_a_title_in_operator_words(page):
    cell = page.locator(CELL)
    assert cell.get_attribute("class") == "c erroring"
    assert cell.inner_text() == "!"
    assert cell.get_attribute("title") == "nfs01 mlx5_0/1: errors (symbol errors)"
    legend = page.locator("#live-grid .legend .c.erroring").evaluate(STYLE, "backgroundColor")
    up = page.locator('.grid a.c[href="/ports/cn001/mlx5_0/1/"]').evaluate(STYLE, "backgroundColor")
    assert cell.evaluate(STYLE, "backgroundColor") == legend != up
    problems = page.locator("#live-problems li[data-event]")
    assert [t for t in problems.all_inner_texts() if "nfs01 mlx5_0/1" in t], problems.all_inner_texts()


def test_clicking_its_port_cell_opens_a_port_page_that_says_the_fabric_collector_reads_it(page, served):
    page.locator(CELL).click()
    page.wait_for_url(f"{served}{PORT}")
    assert page.locator("h1").inner_text() == "nfs01 mlx5_0/1 ! erroring"
    read_by = page.locator(".read-by").inner_text()
    assert read_by.startswith("the fabric collector: no agent reports this host"), read_by
    assert "(the fabric collector's clock, at its sweep)" in page.locator("body").inner_text()


def test_its_node_description_shows_as_text_markup_and_all(page, served):
    page.locator(".grid .gnode.ca a.gn").click()
    page.wait_for_url(f"{served}/nodes/nfs01/")
    assert page.locator(".node-desc").inner_text() == DESCRIPTION
    assert page.locator(".node-desc *").count() == 0  # no element made of it
    assert "A channel adapter no agent reports" in page.locator("body").inner_text()
