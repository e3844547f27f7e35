"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py, fabricweb/dashboard/views/switchpages.py,
fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/wall.py, fabricweb/dashboard/views/overview.py.

A link's problem marks both of its ends: the switch ports cabled to a flapping host port and to one
with symbol errors read as their links do on the switch page and on /fabric/'s grid, and the switch's events
include the link events that name its ports; /fabric/ lists the problem links only, counting the healthy ones
and showing them on request. On SQLite and PostgreSQL: a simulated fabric through the real host
and fabric ingest and health engine (tests/fabric/fabric_support.py)."""

from __future__ import annotations

import re

import pytest

from fabricweb.health.models import Event
from fabricweb.inventory.models import Port
from tests.fabric.fabric_support import polled_worlds

FAULTS = ("cn001/mlx5_0/1:symbol-errors=50/s", "cn003/mlx5_0/1:flap")


@pytest.fixture
def world(each_db, tmp_path):
    return polled_worlds(tmp_path)


def _switch_end(node: str) -> Port:
    return (
        Port.objects.select_related("peer__device__node")
        .get(device__node__name=node, device__name="mlx5_0", number=1)
        .peer
    )


def test_it_marks_the_switch_ports_cabled_to_a_faulty_host_and_lists_their_link_events(viewer, world):
    world(polls=6, faults=FAULTS)
    errors = Event.objects.get(kind="symbol_errors", resolved_at__isnull=True, node__name="cn001")
    flapping = Event.objects.get(kind="flapping", resolved_at__isnull=True, node__name="cn003")
    erroring_end, flapping_end = _switch_end("cn001"), _switch_end("cn003")
    switch = erroring_end.device.node.name
    assert flapping_end.device.node.name == switch  # both hosts on one leaf
    response = viewer.get(f"/switches/{switch}/")
    rows = {r["port"].number: r for r in response.context["rows"]}
    assert rows[erroring_end.number]["health"] == "erroring"
    assert rows[flapping_end.number]["health"] == "flapping"
    html = response.content.decode()
    row = re.search(rf'<tr class="h-erroring" data-port="{erroring_end.number}">(.*?)</tr>', html, re.S)[1]
    assert '<span class="c erroring">!</span> at the far end: symbol errors' in row
    row = re.search(rf'<tr class="h-flapping" data-port="{flapping_end.number}">(.*?)</tr>', html, re.S)[1]
    assert '<span class="c flapping">↕</span> at the far end: link flapping' in row
    assert response.context["tally"]["flapping"] == 1 and " 1 flapping, " in html
    # Its events: the link events naming its ports, judged on the hosts' ends.
    assert {errors.pk, flapping.pk} <= {e.pk for e in response.context["events"]}
    # /fabric/'s grid (and the wall's switch tile) say the same.
    grid = viewer.text("/fabric/").split('<div class="grid">')[1]
    href = f'href="/ports/{switch}/switch/{flapping_end.number}/"'
    assert re.search(rf'<a class="c flapping" {href}[^>]*>↕</a>', grid)


def test_it_leaves_a_switch_port_whose_far_end_is_healthy_as_it_is(viewer, world):
    world(polls=2)
    end = _switch_end("cn001")
    rows = {r["port"].number: r for r in viewer.get(f"/switches/{end.device.node.name}/").context["rows"]}
    assert rows[end.number]["health"] == "up" and rows[end.number]["far_problems"] == []


def test_it_lists_only_the_problem_links_on_the_fabric_page_and_counts_the_healthy_ones(viewer, world):
    w = world(start_faults=("leaf01/7:speed=DDR",))
    w.builder.down("leaf02", 12)
    w.polls(2)
    html = viewer.text("/fabric/")
    table = html.split('<table class="links">')[1].split("</table>")[0]
    assert table.count('<tr class="h-') == 2 and 'class="h-up"' not in table
    assert "Switch-to-switch links (2 with a problem)" in html
    said = '<b id="count-isl-up">10</b> healthy (up) links not listed. <a href="?healthy=on">Show all 12 links</a>'
    assert said in html
    every = viewer.text("/fabric/", {"healthy": "on"})
    table = every.split('<table class="links">')[1].split("</table>")[0]
    assert table.count('class="h-up"') == 10 and '<a href="?">Show only the links with a problem</a>' in every


def test_it_says_every_switch_link_is_up_when_none_has_a_problem(viewer, world):
    world()
    html = viewer.text("/fabric/")
    assert "None: every switch-to-switch link is up." in html and ">12</b> healthy (up) links not listed" in html


def test_it_marks_the_host_port_cabled_to_a_switch_port_with_symbol_errors(viewer, world):
    w = world()
    w.builder.add("leaf01", 4, "symbol_error", 40)  # counted on the switch's end of the cable
    w.poll()
    assert Event.objects.filter(kind="symbol_errors", resolved_at__isnull=True, node__name="leaf01").exists()
    host = Port.objects.select_related("peer__device__node").get(device__node__name="leaf01", number=4).peer
    node, device = host.device.node.name, host.device.name
    href = f'href="/ports/{node}/{device}/{host.number}/"'
    overview = viewer.get("/")
    cell = rf'<a class="c erroring" {href} title="[^"]*symbol errors[^"]*">!</a>'
    assert re.search(cell, str(overview.context["grid"]))
    assert overview.context["counts"].erroring == 1
    port_page = viewer.text(f"/ports/{node}/{device}/{host.number}/")
    assert '<span class="c erroring">!</span>' in port_page
    wall = viewer.text("/wall/")
    assert f'<div class="tile erroring"><span class="tn">{node}</span>' in wall
