"""Covers fabricweb/runfabric/__main__.py, fabricweb/dashboard/management/commands/create_user.py,
collectors/__main__.py, fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/port.py.

/fabric/, a switch page and a host port's far end in Debian's Chromium (Playwright), against runfabric
--fabric: the simulator's hosts and switches, ibsim and opensm simulating the switch fabric, the fabric
collector sweeping it over management datagrams, real Redis, Celery, ingest and the web server.

The fabric is created before runfabric continues it, so that its fabric.net can carry what a switch
may say of itself: leaf02 describes itself with markup, which every page must show as text. One of
leaf01's uplinks (port 21) trains at DDR where both ends run QDR elsewhere. Screenshots of the pages are
left in the pytest temp directory (`fabricpages0/*.png`): docs/screenshots/fabric.png is one of them.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

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

# What a switch may say of itself, within NodeDescription's 64 bytes; its name still comes from `leaf02`.
EVIL_DESC = "MF0;leaf02:<svg onload=__pwned=1><script>__pwned=2</script>"
SLOW_UPLINK = "leaf01/21:speed=DDR"
NODES = 4
WAIT_MS = 30_000


def _create_fabric(sim_dir) -> None:
    """The simulated hosts and switches, written once; leaf02's NodeDescription made markup in fabric.net."""
    argv = [sys.executable, "-m", "collectors", "simulate", "--out", str(sim_dir), "--nodes", str(NODES), "--fabric"]
    argv += [f"--fault={SLOW_UPLINK}", "--once"]
    subprocess.run(argv, env=clean_env(), cwd=REPO, check=True, capture_output=True, timeout=120)
    net = sim_dir / "fabric.net"
    text = net.read_text()
    assert '# "MF0;leaf02:MQM8790-HS2F/U1"' in text
    net.write_text(text.replace('# "MF0;leaf02:MQM8790-HS2F/U1"', f'# "{EVIL_DESC}"'))


@pytest.fixture(scope="module")
def site(tmp_path_factory, django_db_blocker):
    """(base URL, fabric, (user, password), screenshot dir) of a running fabric with its switches swept."""
    from fabricweb.fabric.models import Link
    from fabricweb.health.models import Event
    from fabricweb.inventory.models import Node

    tmp = tmp_path_factory.mktemp("fabricpages")
    sim_dir = tmp / "sim"
    _create_fabric(sim_dir)
    web = f"127.0.0.1:{free_port()}"
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_fabric_pages", db_url) as db,
    ):
        options = ["--nodes", str(NODES), "--web", web, "--fabric", f"--fault={SLOW_UPLINK}"]
        fabric = RunningFabric(tmp, db, db_url, redis_url, options, sim_dir=sim_dir, DEBUG="1")
        try:
            fabric.wait(
                "the switches swept and their links seen",
                lambda: (
                    Node.objects.using(db).filter(kind="switch").count() == 3
                    and Link.objects.using(db).filter(inter_switch=True, gone_at__isnull=True).count() == 40
                ),
                120,
            )
            fabric.wait(
                "the slow uplink's event",
                lambda: Event.objects.using(db).filter(kind="degraded", port__device__node__name="leaf01").exists(),
                60,
            )
            out = fabric.manage("create_user", "victor", "--role", "viewer")
            yield f"http://{web}", fabric, ("victor", re.search(r"with password (\S+)", out)[1]), tmp
        finally:
            fabric.stop()


@pytest.fixture(scope="module")
def chromium():
    with chromium_browser() as browser:
        yield browser


@pytest.fixture
def page(chromium, site):
    base, _, (user, password), _ = site
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    tab.goto(f"{base}/login/")
    tab.fill("input[name=username]", user)
    tab.fill("input[name=password]", password)
    tab.click("button[type=submit]")
    tab.wait_for_url(f"{base}/")
    yield tab
    context.close()
    assert not errors, errors


def _open(page, site, path: str):
    response = page.goto(f"{site[0]}{path}")
    assert response.status == 200, (path, response.status)
    return page


def test_the_fabric_page_shows_the_switches_their_links_and_the_slow_uplink(page, site):
    _open(page, site, "/fabric/")
    assert page.locator(".grid .gnode.sw").count() == 3
    assert page.locator(".grid .gnode.sw a.c").count() == 120  # 3 switches of 40 ports
    slow = page.locator('.grid a.c.degraded[href="/ports/leaf01/switch/21/"]')
    slow.wait_for(timeout=WAIT_MS)
    assert slow.inner_text() == "▼" and slow.get_attribute("title") == "leaf01 port 21 ↔ spine01 port 1: degraded"
    first = page.locator("table.links tbody tr").first
    assert re.sub(r"\s+", " ", first.inner_text()).startswith("▼ degraded leaf01 port 21 spine01 port 1 12X DDR")
    problem = page.locator(".problems li", has_text="leaf01 port 21 ↔ spine01 port 1: trained at")
    problem.wait_for(timeout=WAIT_MS)
    sweep = page.locator("p.sweep").inner_text()
    assert sweep.startswith("Last sweep: fabric-cn001, collected") and " 0 errors." in sweep
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(site[3] / "fabric.png"), full_page=True)

    page.locator(".grid a.gn", has_text="leaf01").click()
    page.wait_for_url(re.compile(r"/switches/leaf01/$"))
    assert page.locator("h1").inner_text().startswith("Switch leaf01")


def test_a_switch_page_shows_its_description_as_text_and_its_ports_far_ends(page, site):
    _open(page, site, "/switches/leaf02/")
    assert page.locator(".node-desc").inner_text() == EVIL_DESC
    assert page.evaluate("window.__pwned") is None and page.locator("main svg, main script").count() == 0
    row = page.locator('tr[data-port="21"]')
    assert "spine01 port 21" in row.inner_text() and "12X QDR" in row.inner_text()
    page.screenshot(path=str(site[3] / "switch.png"), full_page=True)
    row.get_by_role("link", name="spine01 port 21").click()
    page.wait_for_url(re.compile(r"/ports/spine01/switch/21/$"))
    assert page.locator(".far-end").inner_text().startswith("leaf02 port 21")


def test_from_a_host_port_a_click_leads_to_its_switch_port_and_its_switch(page, site):
    _open(page, site, "/ports/cn001/mlx5_0/1/")
    far_end = page.locator(".far-end")
    assert far_end.inner_text() == "leaf01 port 1 (switch leaf01)"
    far_end.get_by_role("link", name="leaf01 port 1").click()
    page.wait_for_url(re.compile(r"/ports/leaf01/switch/1/$"))
    assert re.sub(r"\s+", " ", page.locator("h1").inner_text()).startswith("leaf01 port 1")
    assert page.locator(".far-end").inner_text() == "cn001 mlx5_0/1"
    assert "the far end, cn001 mlx5_0/1" in page.locator(".link-owner").inner_text()
    page.locator("h1 a", has_text="leaf01").click()
    page.wait_for_url(re.compile(r"/switches/leaf01/$"))
    assert "cn001 mlx5_0/1" in page.locator('tr[data-port="1"]').inner_text()


def test_an_uplink_pulled_in_ibsim_turns_up_down_on_the_open_page(page, site):
    _, fabric, _, shots = site
    _open(page, site, "/fabric/")
    page.evaluate("window.__samePage = true")
    assert page.locator("#count-isl-down").inner_text() == "0"
    # The simulator sends ibsim `Unlink "leaf02"[22]` through its console: both ends of the cable go down.
    argv = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), "add", "leaf02/22:down"]
    subprocess.run(argv, env=clean_env(), cwd=REPO, check=True, capture_output=True, timeout=60)
    page.wait_for_function("() => document.getElementById('count-isl-down').textContent === '1'", timeout=WAIT_MS)
    first = page.locator("table.links tbody tr").first
    assert re.sub(r"\s+", " ", first.inner_text()).startswith(
        "✕ down leaf02 port 22 spine01 port 22 no link (last 12X QDR"
    )
    assert page.locator('.grid a.c.down[href="/ports/leaf02/switch/22/"]').inner_text() == "✕"
    page.locator(".problems li", has_text="leaf02 port 22 ↔ spine01 port 22: port down").wait_for(timeout=WAIT_MS)
    # Its own section, swapped in by the same refresh or the next: waited for, as the problem is.
    change = page.locator("table.changes tbody tr.tc-disappeared").first
    change.wait_for(timeout=WAIT_MS)
    assert (
        re.sub(r"\s+", " ", change.inner_text())
        .split(" ", 2)[2]
        .startswith("disappeared leaf02 port 22 spine01 port 22")
    )
    assert page.evaluate("window.__samePage") is True  # updated in place, not reloaded
    page.screenshot(path=str(shots / "fabric-viewport.png"))  # docs/screenshots/fabric.png
