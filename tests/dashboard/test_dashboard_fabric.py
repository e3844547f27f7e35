"""Covers collectors/mads/netfile.py, fabricweb/fabric/ingest.py, fabricweb/fabric/topology.py,
fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/node.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/wall.py, fabricweb/dashboard/views/overview.py;
through them fabricweb/dashboard/linkends.py.

/fabric/, the switch pages, switch ports' pages and the overview's fabric line, on SQLite and PostgreSQL:
a simulated fabric (hosts and their switches, collectors.sim --fabric) stored through the real host and
fabric ingest and health engine (tests/fabric/fabric_support.py), changed between polls as a fabric would."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from fabricweb.fabric.models import FabricNode, Link, TopologyChange
from fabricweb.inventory.models import Node, Port
from tests.dashboard.dashboard_support import Browser
from tests.fabric.fabric_support import polled_worlds

EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)">'


@pytest.fixture
def world(each_db, tmp_path):
    return polled_worlds(tmp_path)


def grid(html: str) -> str:
    return html.split('<div class="grid">')[1].split("</section>")[0]


def cell(html: str, switch: str, number: int) -> str:
    match = re.search(rf'<a class="c [^"]*" href="/ports/{switch}/switch/{number}/"[^>]*>[^<]*</a>', grid(html))
    assert match, (switch, number)
    return match[0]


def isl_rows(html: str) -> list[str]:
    """The switch-to-switch links table, one text line per row, in page order."""
    table = html.split('<table class="links">')[1].split("</table>")[0]
    rows = re.findall(r"<tr class=\"h-[^\"]+\">(.*?)</tr>", table, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", r).split()) for r in rows]


def test_the_fabric_and_switch_pages_send_an_anonymous_visitor_to_the_login(world):
    world(polls=1)
    anonymous = Browser()
    for page in ("/fabric/", "/switches/leaf01/", "/ports/leaf01/switch/1/"):
        assert anonymous.get(page, status=302)["Location"].startswith("/login/?next="), page


def test_the_fabric_page_draws_every_switch_port_coloured_and_marked(viewer, world):
    w = world(start_faults=("leaf01/5:speed=DDR",))
    w.builder.down("leaf01", 8)  # an uplink's cable pulled
    w.polls(2)
    response = viewer.get("/fabric/")
    html = response.content.decode()
    assert '<a class="gn" href="/switches/leaf01/"' in grid(html) and 'href="/switches/spine01/"' in grid(html)
    assert cell(html, "leaf01", 1) == '<a class="c up" href="/ports/leaf01/switch/1/"></a>'
    assert cell(html, "leaf01", 5) == (
        '<a class="c degraded" href="/ports/leaf01/switch/5/" title="leaf01 port 5 ↔ cn003 mlx5_0/1: degraded">▼</a>'
    )
    assert cell(html, "leaf01", 8) == (
        '<a class="c down" href="/ports/leaf01/switch/8/" title="leaf01 port 8 ↔ spine01 port 2: down">✕</a>'
    )
    # leaf02 port 6 faces no host (5 of the 6 hosts' 10 ports fill leaf01 and most of leaf02): never up.
    assert cell(html, "leaf02", 6) == '<a class="c not_connected" href="/ports/leaf02/switch/6/">–</a>'
    tally = response.context["tally"]
    assert (tally["degraded"], tally["down"], tally["unknown"]) == (1, 2, 0)  # both ends of the pulled cable
    assert sum(tally.values()) == response.context["ports"] == 36


def test_it_shows_both_ends_of_a_degraded_link(viewer, world):
    world(start_faults=("leaf01/7:speed=DDR",))
    response = viewer.get("/fabric/")
    html = response.content.decode()
    rows = isl_rows(html)
    assert rows == [  # only the link with a problem, by default: test_dashboard_link_ends.py
        "▼ degraded leaf01 port 7 spine01 port 1 12X DDR (60 Gb/s) below what both support 12X QDR "
        "since 2026-03-01 00:00:10"
    ]
    rows = isl_rows(viewer.text("/fabric/", {"healthy": "on"}))
    assert len(rows) == 12  # 2 leaves x 6 uplinks
    assert all(r.startswith("up leaf0") for r in rows[1:])
    # Both ends link to their ports' pages, and the link's problem names both ends, once.
    table = html.split('<table class="links">')[1]
    assert '<a href="/ports/leaf01/switch/7/">leaf01 port 7</a>' in table
    assert '<a href="/ports/spine01/switch/1/">spine01 port 1</a>' in table
    problems = [e.message for e in response.context["problems"]]
    assert [m for m in problems if "12X DDR" in m] == [
        "leaf01 port 7 ↔ spine01 port 1: trained at 60 Gb/s (12X DDR), expected 120 Gb/s (12X QDR): "
        "speed downgrade (DDR where QDR expected) — both ends support 12X QDR"
    ]
    assert response.context["counts"].isl == {"down": 0, "unknown": 0, "degraded": 1, "up": 11}


def test_a_pulled_switch_cable_is_a_down_link_listed_first_and_a_topology_change(viewer, world):
    w = world(start_faults=("leaf01/7:speed=DDR",))
    w.builder.down("leaf02", 12)
    w.polls(2)
    response = viewer.get("/fabric/")
    html = response.content.decode()
    rows = isl_rows(html)
    assert rows[0].startswith(
        "✕ down leaf02 port 12 spine01 port 12 no link (last 12X QDR, 120 Gb/s) 12X QDR not seen since"
    )
    assert rows[1].startswith("▼ degraded leaf01 port 7 spine01 port 1")
    changes = response.context["changes"]
    assert [(c.kind, c.label, c.peer_before) for c in changes] == [("disappeared", "leaf02 port 12", "spine01 port 12")]
    assert "<td>disappeared</td><td>leaf02 port 12</td><td>spine01 port 12</td>" in html
    assert "leaf02 port 12 ↔ spine01 port 12: port down" in " ".join(e.message for e in response.context["problems"])
    # The overview's fabric line says it too, and links here.
    line = viewer.text("/").split('class="fabric-line"')[1].split("</p>")[0]
    assert '<a href="/fabric/">Fabric</a>' in line
    text = " ".join(re.sub(r"<[^>]+>", "", line).split())
    assert "3 switches · 21 links" in text  # 22 cables, one pulled
    assert "inter-switch links: 12, ✕ 1 down, ▼ 1 degraded" in text and "last sweep" in text


def test_an_unreachable_switch_is_shown_as_such(viewer, world):
    w = world()
    w.builder.mute("leaf02")
    w.polls(2)
    response = viewer.get("/fabric/")
    html = response.content.decode()
    assert '<a class="gn" href="/switches/leaf02/" title="leaf02: 12 unknown">leaf02 (unreachable)</a>' in html
    assert '<div class="gnode sw unreachable">' in html
    assert cell(html, "leaf02", 7) == (
        '<a class="c unknown" href="/ports/leaf02/switch/7/" '
        'title="leaf02 port 7 ↔ spine01 port 7: unknown: the switch does not answer">?</a>'
    )
    counts = response.context["counts"]
    assert (counts.switches, counts.unreachable) == (3, 1)
    assert counts.isl == {"down": 0, "unknown": 6, "degraded": 0, "up": 6}  # its uplinks: still up at spine01
    assert isl_rows(html)[0].startswith("? unknown leaf02 port 7 spine01 port 7 unknown (last 12X QDR")
    assert any(e.message.startswith("leaf02: switch ") for e in response.context["problems"])
    page = viewer.text("/switches/leaf02/")
    assert "? unreachable" in page and "not reached by the sweeps since 2026-03-01 00:00:" in page


def test_the_switch_page_reads_like_iblinkinfo(viewer, world):
    w = world(start_faults=("leaf01/5:speed=DDR",))
    w.builder.add("leaf01", 4, "symbol_error", 40)
    w.poll()
    switch = Node.objects.get(name="leaf01")
    response = viewer.get("/switches/leaf01/")
    html = response.content.decode()
    for words in (
        "Switch leaf01",
        f'<dd class="guid">{switch.guid}</dd>',
        '<dd class="node-desc">MF0;leaf01:MQM8790-HS2F/U1</dd>',
        "0x0002c9 · 0xd2f0",
        "12: 9 up, 0 down, 1 degraded, 1 erroring, 1 not connected",  # port 4 erroring: its symbol errors
        "by the last fabric sweep",
    ):
        assert words in html, words
    rows = {r["port"].number: r for r in response.context["rows"]}
    assert (rows[5]["link"].name, rows[5]["capable"].name, rows[5]["below"]) == ("12X DDR", "12X QDR", True)
    assert rows[6]["health"] == "not_connected" and rows[6]["link"] is None
    assert rows[1]["errors"] == ([], 20.0)  # the last hour: two intervals of 10 s (the first poll has none)
    assert rows[4]["errors"] == ([("symbol_error", 40)], 20.0)
    assert "<td>symbol_error 40</td>" in html
    row1 = re.search(r'<tr class="h-up" data-port="1">(.*?)</tr>', html, re.S)[1]
    assert '<a href="/ports/cn001/mlx5_0/1/">cn001 mlx5_0/1</a>' in row1 and "12X QDR (120 Gb/s)" in row1
    row7 = re.search(r'<tr class="h-up" data-port="7">(.*?)</tr>', html, re.S)[1]
    assert '<a href="/ports/spine01/switch/1/">spine01 port 1</a> (<a href="/switches/spine01/">switch</a>)' in row7
    assert "▼ below" in re.search(r'<tr class="h-degraded" data-port="5">(.*?)</tr>', html, re.S)[1]
    # By GUID, in either case; a host's name goes to its node page; anything else is a 404.
    assert viewer.get(f"/switches/{switch.guid.upper().replace('0X', '0x')}/").context["switch"] == switch
    assert viewer.get("/switches/cn001/", status=302)["Location"] == "/nodes/cn001/"
    viewer.get("/switches/nosuch/", status=404)
    viewer.get("/switches/0x0000000000000001/", status=404)


def test_the_node_page_of_a_switch_is_its_switch_page(viewer, world):
    world(polls=1)
    assert viewer.get("/nodes/leaf01/", status=302)["Location"] == "/switches/leaf01/"


def test_a_host_port_links_to_its_switch_port_and_back(viewer, world, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    # Polls of the last few minutes, so that the charts' last hour holds them.
    monkeypatch.setattr("tests.fabric.fabric_support.T0", timezone.now() - timedelta(minutes=5))
    world()
    host = viewer.text("/ports/cn001/mlx5_0/1/")
    assert '<a href="/ports/leaf01/switch/1/">leaf01 port 1</a> (switch <a href="/switches/leaf01/">leaf01</a>)' in host
    assert "this end: the link's own state (down, degraded, flapping) is judged on this port" in host
    assert host.split("<dt>both ends support</dt>")[1].startswith("<dd>120 Gb/s (12X QDR)</dd>")
    switch_port = viewer.get("/ports/leaf01/switch/1/")
    html = switch_port.content.decode()
    assert "<title>leaf01 port 1 · fabricweb</title>" in html
    assert '<h1><a href="/switches/leaf01/">leaf01</a> port 1 ' in html
    assert '<dd class="far-end"><a href="/ports/cn001/mlx5_0/1/">cn001 mlx5_0/1</a></dd>' in html
    assert "the far end, cn001 mlx5_0/1: the link's own state is judged there" in html
    assert 'id="chart-traffic"' in html and "PCIe" not in html
    # Its charts work as a host port's do.
    series = viewer.get("/ports/leaf01/switch/1/series", {"range": "1h"}).json()
    assert series["source"] == "raw samples" and series["link"] == "12X QDR" and len(series["t"]) == 2


def test_a_switch_port_between_two_switches_links_to_the_other_switch_port(viewer, world):
    world()
    html = viewer.text("/ports/leaf02/switch/9/")
    far = '<a href="/ports/spine01/switch/9/">spine01 port 9</a> (switch <a href="/switches/spine01/">spine01</a>)'
    assert far in html
    assert "this end: the link" in html  # of two switch ports, the first by name speaks for the link
    assert "the far end, leaf02 port 9" in viewer.text("/ports/spine01/switch/9/")


def test_the_overview_counts_hosts_only_and_keeps_switches_out_of_its_grid(viewer, world):
    w = world()
    w.builder.mute("leaf02")
    w.polls(1)
    response = viewer.get("/")
    counts = response.context["counts"]
    host_ports = Port.objects.filter(device__node__kind=Node.Kind.HOST).count()
    assert (counts.nodes, counts.ports) == (6, host_ports)
    assert Node.objects.count() == 10  # 6 hosts, 3 switches and the collector
    html = response.content.decode()
    assert "/ports/leaf01/" not in grid(html) and "fabric-test" not in grid(html)
    assert ">6</b> hosts" in html and "stale hosts" in html
    # The switch's problem is in the problem list all the same, linking to its switch page.
    assert '<span class="col-where"><a href="/switches/leaf02/">leaf02</a></span>' in html
    assert '<span class="detail">leaf02: switch ' in html
    fabric = response.context["fabric_counts"]
    assert (fabric.switches, fabric.unreachable, fabric.last_sweep.collector.name) == (3, 1, "fabric-test")


def test_the_events_page_the_wall_and_a_collector_page_work_with_switches(viewer, world):
    w = world(start_faults=("leaf01/7:speed=DDR",))
    w.builder.mute("leaf02")
    w.polls(2)
    events = viewer.text("/events/")
    assert '<a href="/switches/leaf02/">leaf02</a>: <span class="what">switch unreachable</span>' in events
    link = '<a href="/ports/leaf01/switch/7/">leaf01 port 7</a> ↔ <a href="/ports/spine01/switch/1/">spine01 port 1</a>'
    assert f'{link}: <span class="what">link degraded</span>' in events
    assert '<td class="reason">trained at' in events
    assert "leaf02: switch " in viewer.text("/wall/")
    assert viewer.get("/events/", {"node": "leaf0?"}).context["events"].paginator.count == 2
    collector = viewer.text("/nodes/fabric-test/")
    assert "A fabric collector: it sweeps the switch fabric" in collector and 'href="/fabric/"' in collector


def test_the_fabric_page_shows_the_last_sweep_and_a_standby_collector(viewer, world):
    from collectors.mads import netfile
    from fabricweb.fabric.ingest import ingest_fabric
    from tests.fabric.fabric_support import SweepBuilder

    w = world()
    with open(f"{w.out}/fabric.net", encoding="utf-8") as f:
        standby = SweepBuilder(netfile.parse(f.read()), "fabric-b")
    assert ingest_fabric(standby.snapshot(w.now), now=w.now).status == "standby"
    response = viewer.get("/fabric/")
    html = " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())
    assert (
        "Last sweep: fabric-test , collected 2026-03-01 00:00:20 UTC, stored" in html
        and "took 0.50 s (1000 queries): 12 nodes, 3 switches, 22 links, 0 errors." in html
    )
    assert "Standby: fabric-b (standby: fabric-test leads (its last sweep was applied at 00:00:20))." in html
    collectors = {c["node"].name: c for c in response.context["collectors"]}
    assert collectors["fabric-test"]["sweep"].applied and not collectors["fabric-b"]["sweep"].applied


def test_the_expected_cablings_problems_are_counted(viewer, world):
    from fabricweb.fabric.topology import import_topology

    w = world(polls=1, start_faults=("cn001/mlx5_1/1:miscable",))
    assert "Expected cabling" not in viewer.text("/fabric/")
    with open(w.expected_file, encoding="utf-8") as f:
        import_topology(f.read(), "fabric-expected.yaml")
    w.poll()
    html = viewer.text("/fabric/")
    assert 'Expected cabling: 22 expected links, <a class="bad" href="/events/?kind=cabling">1 problem</a>.' in html
    assert "leaf01 port 2: cabled wrong: expected leaf01 port 2 ↔ cn001 mlx5_1/1" in html


def test_switch_descriptions_and_far_ends_are_shown_as_text_never_markup(viewer, world):
    w = world()
    w.builder.nodes["leaf01"].description = EVIL  # a switch names itself: anyone managing it sets this
    w.poll()
    assert FabricNode.objects.get(node__name="leaf01").description == EVIL
    Port.objects.filter(device__node__name="leaf02", number=1).update(peer_label=EVIL)
    Port.objects.filter(device__node__name="leaf02", number=2).update(state_id=1, state_name="DOWN", peer_label=EVIL)
    for page in ("/switches/leaf01/", "/switches/leaf02/", "/fabric/", "/ports/leaf02/switch/1/"):
        html = viewer.text(page)
        assert "<script>alert(1)" not in html and "<img src=x" not in html, page
    assert f'<dd class="node-desc">{escape(EVIL)}</dd>' in viewer.text("/switches/leaf01/")
    assert escape(EVIL) in cell(viewer.text("/fabric/"), "leaf02", 2)


def test_a_bad_page_number_is_a_message(viewer, world):
    world(polls=1)
    html = viewer.text("/fabric/", {"links": "0"}, status=400)
    assert "links: Ensure this value is greater than or equal to 1" in html


def test_the_fabric_page_costs_the_same_queries_for_more_switches(viewer, world):
    def queries() -> int:
        viewer.get("/fabric/")
        with CaptureQueriesContext(connection) as seen:
            viewer.get("/fabric/")
        return len(seen)

    small = world(nodes=4)
    small.builder.down("leaf01", 8)
    small.poll()
    few = queries()
    for model in (Node, FabricNode, Link, TopologyChange):
        model.objects.all().delete()
    big = world(nodes=16)  # 4 leaves, 2 spines
    big.builder.down("leaf01", 8)
    big.builder.mute("leaf03")
    big.poll()
    assert Node.objects.filter(kind=Node.Kind.SWITCH).count() > 3
    assert queries() == few
