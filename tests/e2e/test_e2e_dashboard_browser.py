"""Covers fabricweb/runfabric/__main__.py, fabricweb/telemetry/history/samples.py,
fabricweb/dashboard/management/commands/create_user.py, collectors/__main__.py, fabricweb/dashboard/views/port.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/wall.py.

The dashboard in Debian's Chromium (Playwright) against a running fabric: runfabric with the web server,
real Redis, Celery and the simulator. One fabric and one browser for the module (SQLite: the view tests
cover both databases); screenshots of every page are left in the pytest temp directory."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabricweb.health.models import Event
from harness import free_port
from tests.e2e.e2e_harness import (
    REPO,
    RunningFabric,
    chromium_browser,
    clean_env,
    database_alias,
    fresh_database,
    leased_redis_db,
)

EVIL = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
WAIT_MS = 30_000


def fault(fabric: RunningFabric, *specs: str) -> None:
    argv = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), "add", *specs]
    subprocess.run(argv, env=clean_env(), cwd=REPO, check=True, capture_output=True, timeout=60)


def evil_tree(fabric: RunningFabric, tmp: Path) -> Path:
    """A copy of cn001's tree whose node_desc (settable by root on a node) is markup."""
    root = tmp / "evil" / "cn900"
    shutil.copytree(fabric.sim_dir / "cn001", root, symlinks=True)
    for device in (root / "class" / "infiniband").iterdir():  # links into the PCI tree, however deep it nests
        (device / "node_desc").write_text(EVIL + "\n")
    return root


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory, django_db_blocker):
    """(base URL, fabric, {role: (user, password)}, screenshot dir): 4 simulated nodes, cn001 mlx5_0/1 degraded,
    cn004's agent stopped after 3 polls (runfabric --agent-stops, as in `make demo`), cn900 with an evil node_desc."""
    tmp = tmp_path_factory.mktemp("dashboard")
    web = f"127.0.0.1:{free_port()}"
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_dashboard", db_url) as db,
    ):
        # DEBUG: plain HTTP on loopback (no HTTPS redirect, no Secure-only cookies).
        options = ["--nodes", "4", "--web", web, "--agent-stops", "cn004"]
        fabric = RunningFabric(tmp, db, db_url, redis_url, options, DEBUG="1")
        try:
            events = Event.objects.using(db)
            fabric.wait("first polls stored", lambda: _polled(db), 90)
            fault(fabric, "cn001/mlx5_0/1:width=1X")
            fabric.start_agent("cn900", evil_tree(fabric, tmp))
            fabric.wait(
                "the degraded event", lambda: events.filter(kind="degraded", resolved_at__isnull=True).exists(), 60
            )
            users = {}
            for role, name in (("operator", "olga"), ("viewer", "victor")):
                out = fabric.manage("create_user", name, "--role", role)
                users[role] = (name, re.search(r"with password (\S+)", out)[1])
            fabric.wait("cn900 registered", lambda: _node_exists(db, "cn900"), 60)
            yield f"http://{web}", fabric, users, tmp
        finally:
            fabric.stop()


def _polled(db: str) -> bool:
    from fabricweb.telemetry.history.samples import between

    return len({s.port_id for s in between(using=db)}) >= 4


def _node_exists(db: str, name: str) -> bool:
    from fabricweb.inventory.models import Node

    return Node.objects.using(db).filter(name=name, devices__isnull=False).exists()


@pytest.fixture(scope="module")
def chromium():
    with chromium_browser() as browser:
        yield browser


class Session:
    """A logged-in browser tab that records JavaScript errors and saves screenshots."""

    def __init__(self, chromium, dashboard, role: str) -> None:
        self.base, self.fabric, users, self.shots = dashboard
        self.context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.user, password = users[role]
        self.page.goto(f"{self.base}/")
        assert "/login/" in self.page.url
        self.page.fill("input[name=username]", self.user)
        self.page.fill("input[name=password]", password)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(f"{self.base}/")

    def open(self, path: str):
        response = self.page.goto(f"{self.base}{path}")
        assert response.status == 200, (path, response.status)
        return self.page

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()
        assert not self.errors, self.errors


@pytest.fixture
def operator(chromium, dashboard):
    session = Session(chromium, dashboard, "operator")
    yield session
    session.close()


@pytest.fixture
def viewer(chromium, dashboard):
    session = Session(chromium, dashboard, "viewer")
    yield session
    session.close()


def test_an_operator_finds_the_degraded_port_reads_its_charts_and_acknowledges_it(operator):
    page = operator.open("/")
    problem = page.locator(".problems li", has_text="cn001 mlx5_0/1: trained at")
    problem.wait_for(timeout=WAIT_MS)
    assert "(1X HDR)" in problem.inner_text() and "width downgrade" in problem.inner_text()
    assert page.locator('.grid a.c.degraded[href="/ports/cn001/mlx5_0/1/"]').inner_text() == "▼"
    operator.shot("overview")

    problem.locator("a").first.click()
    page.wait_for_url(re.compile(r"/ports/cn001/mlx5_0/1/$"))
    # The plotted data, not only the div: receive throughput has points with values.
    page.wait_for_function(
        "() => { const c = document.getElementById('chart-traffic');"
        " return c && c.data && c.data[0].y.filter(v => v !== null).length >= 2; }",
        timeout=WAIT_MS,
    )
    traffic = page.evaluate(
        "document.getElementById('chart-traffic').data.map(t => [t.name, t.y.filter(v => v !== null).length])"
    )
    assert traffic[0][0] == "receive" and traffic[0][1] >= 2
    link = page.evaluate("document.getElementById('chart-link').data[0].text")
    assert "1X HDR" in link and "4X HDR" in link
    assert page.evaluate("document.querySelector('#chart-traffic .ytitle').textContent") == "Gb/s"
    operator.shot("port")

    events = operator.open("/events/?kind=degraded")
    # The problem column names the port, the reason column the evidence.
    row = events.locator("tr", has_text="cn001 mlx5_0/1").filter(has_text="trained at")
    row.locator("input[name=note]").fill("reseating the cable")
    row.get_by_role("button", name="Acknowledge").click()
    events.wait_for_url(re.compile(r"/events/"))
    acked = events.locator("tr", has_text="cn001 mlx5_0/1").first.inner_text()
    assert "acknowledged by olga at " in acked and " UTC: reseating the cable" in acked
    operator.shot("events")


def test_a_viewer_gets_no_buttons_and_a_403_for_a_forged_post(viewer, dashboard):
    page = viewer.open("/events/")
    assert page.get_by_role("button", name="Acknowledge").count() == 0
    assert page.get_by_role("button", name="Silence").count() == 0
    _, fabric, _, _ = dashboard
    event = Event.objects.using(fabric.db).filter(resolved_at__isnull=True).first()
    status = page.evaluate(
        """async (pk) => {
            const token = document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1];
            const body = new URLSearchParams({csrfmiddlewaretoken: token, note: 'forged'});
            const r = await fetch(`/events/${pk}/acknowledge`, {method: 'POST', body, credentials: 'same-origin'});
            return r.status;
        }""",
        event.pk,
    )
    assert status == 403
    viewer.errors = [e for e in viewer.errors if "403" not in e]  # the refused fetch itself is logged
    page = viewer.open("/ports/cn001/mlx5_0/1/")
    assert page.get_by_role("button", name=re.compile("baseline")).count() == 0
    viewer.shot("port-viewer")


def test_a_node_desc_with_markup_is_shown_as_text(viewer):
    page = viewer.open("/nodes/cn900/")
    assert page.locator(".node-desc").first.inner_text() == EVIL
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img").count() == 0
    viewer.shot("node")


def test_the_overview_updates_by_itself_when_a_fault_is_injected(viewer, dashboard):
    page = viewer.open("/")
    page.evaluate("window.__samePage = true")
    before = int(page.locator("#count-down").inner_text())
    _, fabric, _, _ = dashboard
    fault(fabric, "cn003/mlx5_1/1:down")
    page.wait_for_function(
        f"() => parseInt(document.getElementById('count-down').textContent) > {before}", timeout=WAIT_MS
    )
    page.locator(".problems li", has_text="cn003 mlx5_1/1: port down").wait_for(timeout=WAIT_MS)
    assert page.evaluate("window.__samePage") is True  # refreshed in place, not reloaded
    assert page.locator('.grid a.c.down[href="/ports/cn003/mlx5_1/1/"]').inner_text() == "✕"


def test_the_wallboard_shows_problems_large_and_dark(viewer):
    page = viewer.open("/wall/")
    assert page.locator("header.top").count() == 0
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 15, 18)"
    page.locator(".wall-problems li", has_text="cn001 mlx5_0/1").wait_for(timeout=WAIT_MS)
    viewer.shot("wall")


def test_a_node_whose_agent_stopped_is_shown_stale(viewer, dashboard):
    page = viewer.open("/")
    page.locator(".gnode.stale", has_text="cn004 (stale)").wait_for(timeout=WAIT_MS)
    assert int(page.locator("#count-stale").inner_text()) == 1
    page.locator(".problems li", has_text="cn004: no snapshot for").wait_for(timeout=WAIT_MS)
    _, fabric, _, _ = dashboard
    assert "the agent of cn004 has stopped" in fabric.runner.log.read_text()
