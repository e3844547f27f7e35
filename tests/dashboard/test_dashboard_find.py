"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py, fabricweb/dashboard/views/search.py,
fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/events.py,
fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/actions.py, fabricweb/dashboard/views/exports.py;
through them fabricweb/dashboard/finder.py, fabricweb/dashboard/rowactions.py.

Finding things, on SQLite and PostgreSQL: the search box's answers (nodes, ports, GUIDs, switches, in any
case), the events page's state filters and time range, and the CSV exports of events and ports (escaped,
formulas disarmed, units in the headers)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Node, Port
from tests.dashboard.dashboard_support import Browser
from tests.fabric.fabric_support import polled_worlds

HOSTILE = '<img src=x onerror="alert(1)">'


def redirect_of(browser: Browser, query: str) -> str:
    return browser.get("/search/", {"q": query}, status=302)["Location"]


def csv_rows(response) -> list[list[str]]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_search_finds_a_node_by_its_name_in_any_case(viewer, faulty):
    assert redirect_of(viewer, "CN002") == "/nodes/cn002/"
    assert redirect_of(viewer, "  cn002 ") == "/nodes/cn002/"
    html = viewer.text("/search/", {"q": "Cn00"})
    assert "3 matches for “Cn00”" in html
    for name in ("cn001", "cn002", "cn003"):
        assert f'<a href="/nodes/{name}/">{name}</a>' in html


def test_search_finds_a_port_by_its_label_in_each_spelling(viewer, faulty):
    for query in ("cn003 mlx5_1/1", "cn003/mlx5_1/1", "CN003 MLX5_1 1"):
        assert redirect_of(viewer, query) == "/ports/cn003/mlx5_1/1/", query
    assert "Nothing found for “cn003 mlx5_1/9”" in viewer.text("/search/", {"q": "cn003 mlx5_1/9"})


def test_search_finds_a_port_and_an_hca_by_their_guids(viewer, faulty):
    port = Port.objects.select_related("device").get(device__node__name="cn002", device__name="mlx4_0", number=1)
    digits = port.port_guid[2:]
    for query in (port.port_guid, port.port_guid.upper().replace("X", "x"), digits, digits.upper()):
        assert redirect_of(viewer, query) == "/ports/cn002/mlx4_0/1/", query
    node_guid = port.device.node_guid  # sysfs' form, 0c42:a103:00a1:b2c0
    assert ":" in node_guid
    for query in (node_guid, "0x" + node_guid.replace(":", "").upper()):
        assert redirect_of(viewer, query) == "/nodes/cn002/#hca-mlx4_0", query
    assert "Nothing found for “0x0000000000000000”" in viewer.text("/search/", {"q": "0x0000000000000000"})


def test_it_finds_an_hca_by_its_node_and_device_name(viewer, faulty):
    for query in ("cn002 mlx4_0", "CN002/MLX4_0", " cn002  mlx4_0 "):
        assert redirect_of(viewer, query) == "/nodes/cn002/#hca-mlx4_0", query
    assert '<h2 id="hca-mlx4_0">mlx4_0 <span class="muted">ConnectX-3 (MT4099)</span>' in viewer.text("/nodes/cn002/")
    assert "Nothing found for “cn002 mlx5_9”" in viewer.text("/search/", {"q": "cn002 mlx5_9"})


def test_it_lists_every_hca_of_a_model_named_by_its_hca_type_or_its_name(viewer, faulty):
    for query in ("MT4125", "mt4125", "ConnectX-6 Dx", "connectx-6  dx"):
        html = viewer.text("/search/", {"q": query})
        assert "2 matches for" in html, query
        for device in ("mlx5_0", "mlx5_1"):
            link = f'<a href="/nodes/cn003/#hca-{device}">cn003 {device}</a>'
            row = f"<td>HCA</td><td>{link}</td><td>ConnectX-6 Dx (MT4125), "
            assert row in html, (query, device)
    html = viewer.text("/search/", {"q": "ConnectX-6"})  # the model, not its Dx sibling
    assert "cn001 mlx5_0" in html and "cn003" not in html
    html = viewer.text("/search/", {"q": "MT4099"})  # one HCA of that model: listed, the query names a model
    assert "1 match for" in html and "cn002 mlx4_0" in html and "ConnectX-3 (MT4099)" in html
    assert "Nothing found for “ConnectX-9”" in viewer.text("/search/", {"q": "ConnectX-9"})


def test_it_finds_a_port_by_its_lid(viewer, faulty):
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    assert port.lid and Port.objects.filter(lid=port.lid).count() == 1
    for query in (f"lid {port.lid}", f"LID {port.lid}", f"lid{port.lid}"):
        assert redirect_of(viewer, query) == "/ports/cn001/mlx5_0/1/", query
    alone = viewer.get("/search/", {"q": str(port.lid)}, status=None)  # the number alone, as ibstat's Base lid
    if alone.status_code == 302:
        assert alone["Location"] == "/ports/cn001/mlx5_0/1/"
    else:
        assert f"Active, LID {port.lid}, port GUID" in alone.content.decode()
    free = max(Port.objects.exclude(lid=None).values_list("lid", flat=True)) + 1
    assert f"Nothing found for “lid {free}”" in viewer.text("/search/", {"q": f"lid {free}"})
    Port.objects.filter(device__node__name="cn003").update(lid=0)  # as a port without a LID reads
    assert "Nothing found for “lid 0”" in viewer.text("/search/", {"q": "lid 0"})  # 0 is no LID


def test_search_says_when_nothing_matches_and_what_it_looks_for(viewer, faulty):
    html = viewer.text("/search/", {"q": "nosuchnode"})
    assert "Nothing found for “nosuchnode”" in html and "a GUID is found whole" in html
    assert "Type a node" in viewer.text("/search/")
    html = viewer.text("/search/", {"q": "x" * 101}, status=400)
    assert "The search was not run" in html and "at most 100 characters" in html


def test_search_escapes_a_hostile_node_name_and_query(viewer, faulty):
    Node.objects.create(name=HOSTILE, first_seen_at=timezone.now())
    html = viewer.text("/search/", {"q": "<IMG"})
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</a>" in html
    assert HOSTILE not in html and "<IMG" not in html
    html = viewer.text("/search/", {"q": "<script>x"})
    assert "Nothing found for “&lt;script&gt;x”" in html and "<script>x" not in html


def test_search_takes_a_bounded_number_of_queries(viewer, faulty):
    for query in ("cn0", "cn003 mlx5_1/1", "0x0000000000000001", "nosuch", "cn002 mlx4_0", "MT4123", "lid 1"):
        with CaptureQueriesContext(connection) as queries:
            viewer.get("/search/", {"q": query}, status=None)
        assert len(queries) <= 10, (query, [q["sql"] for q in queries])


def test_the_search_box_is_on_every_page_with_its_shortcut(viewer, faulty):
    for page in ("/", "/events/", "/nodes/cn001/", "/fabric/"):
        html = viewer.text(page)
        assert 'action="/search/"' in html and 'aria-keyshortcuts="/"' in html and "dashboard/search.js" in html
    assert 'action="/search/"' not in Browser().text("/login/")


@pytest.fixture
def switches(each_db, tmp_path):
    return polled_worlds(tmp_path)(polls=1)


def test_search_finds_a_switch_and_its_port_by_name_and_guid(viewer, switches):
    leaf = Node.objects.get(name="leaf01")
    assert redirect_of(viewer, "LEAF01") == "/switches/leaf01/"
    assert redirect_of(viewer, leaf.guid.upper().replace("X", "x")) == "/switches/leaf01/"
    assert redirect_of(viewer, leaf.guid[2:]) == "/switches/leaf01/"
    for query in ("leaf01 port 5", "Leaf01/switch/5", "leaf01/5"):
        assert redirect_of(viewer, query) == "/ports/leaf01/switch/5/", query
    html = viewer.text("/search/", {"q": "leaf"})
    assert '<td>switch</td><td><a href="/switches/leaf02/">leaf02</a></td>' in html


# --- the events page: states, time range, CSV ---------------------------------------------------


def events_shown(browser: Browser, **query) -> list[str]:
    return [e.kind for e in browser.get("/events/", query).context["events"]]


def test_events_filter_by_state_and_by_time_range(operator, faulty):
    now = timezone.now()
    down = Event.objects.get(kind="down", resolved_at__isnull=True)
    degraded = Event.objects.get(kind="degraded", resolved_at__isnull=True)
    Event.objects.filter(pk=down.pk).update(opened_at=now - timedelta(days=3))
    Event.objects.filter(pk=degraded.pk).update(
        opened_at=now - timedelta(days=3), resolved_at=now - timedelta(days=2), updated_at=now - timedelta(days=2)
    )
    operator.post(f"/events/{down.pk}/acknowledge", {"note": "cable ordered"})
    assert "down" in events_shown(operator, status="acknowledged")
    assert "degraded" not in events_shown(operator, status="open")
    assert "degraded" in events_shown(operator, status="resolved")
    assert "degraded" not in events_shown(operator, status="all", last="24h")  # resolved 2 days ago
    assert {"down", "degraded"} <= set(events_shown(operator, status="all", last="7d"))
    assert "down" in events_shown(operator, status="all", last="1h")  # still open: open during the last hour
    window = {"status": "all", "since": f"{now - timedelta(days=4):%Y-%m-%dT%H:%M}"}
    assert "degraded" not in events_shown(
        operator, **window, until=f"{now - timedelta(days=3, hours=1):%Y-%m-%d %H:%M}"
    )
    assert "degraded" in events_shown(operator, **window, until=f"{now - timedelta(days=2, hours=12):%Y-%m-%d %H:%M}")
    html = operator.text("/events/", {"status": "all", "last": "24h"})
    assert "open at some time since" in html and 'name="last"' in html and 'name="since"' in html


def test_a_bad_event_range_is_a_message(viewer, faulty):
    for query, words in (
        ({"since": "yesterday"}, "since: Enter a valid date/time."),
        ({"last": "2h"}, "last: Select a valid choice"),
        ({"last": "1h", "since": "2026-01-01 00:00"}, "choose either a preset"),
        ({"since": "2026-01-02 00:00", "until": "2026-01-01 00:00"}, "from must be before to"),
        ({"format": "xls"}, "format: Select a valid choice"),
    ):
        html = viewer.text("/events/", query, status=400)
        assert "The filter was not applied" in html and words in html, query


def test_events_export_as_csv_escaped_and_formulas_disarmed(viewer, faulty):
    down = Event.objects.get(kind="down", resolved_at__isnull=True)
    Event.objects.filter(pk=down.pk).update(message='=HYPERLINK("http://x","click")', reason='a, "b"\nc')
    rows = csv_rows(viewer.get("/events/", {"status": "open", "format": "csv", "page": "2"}))
    header, body = rows[0], rows[1:]
    assert header[:3] == ["severity", "kind", "node"] and "opened (UTC)" in header and "resolved (UTC)" in header
    assert len(body) == Event.objects.filter(resolved_at__isnull=True).count()
    row = next(r for r in body if r[1] == "down")
    assert row[2:5] == ["cn003", "mlx5_1", "1"]
    assert row[5] == '\'=HYPERLINK("http://x","click")' and row[6] == 'a, "b"\nc'
    assert html_link_to_csv(viewer) == "?status=open&format=csv"
    assert csv_rows(viewer.get("/events/", {"status": "resolved", "format": "csv"}))[1:] == []


def html_link_to_csv(browser: Browser) -> str:
    html = browser.text("/events/", {"status": "open", "page": "1"})
    return html.split('<a class="export" href="')[1].split('"')[0].replace("&amp;", "&")


def test_ports_export_as_csv_with_the_overview_filters(viewer, faulty):
    rows = csv_rows(viewer.get("/ports.csv"))
    header, body = rows[0], rows[1:]
    assert "rate (Gb/s)" in header and "width (lanes)" in header and "port GUID" in header
    assert len(body) == Port.objects.filter(device__node__kind=Node.Kind.HOST).count()
    down = csv_rows(viewer.get("/ports.csv", {"state": "down"}))[1:]
    assert [r[:5] for r in down] == [["cn003", "mlx5_1", "1", "down", "Down"]]
    assert down[0][6] == "no link" and down[0][7] == ""
    degraded = csv_rows(viewer.get("/ports.csv", {"state": "degraded"}))[1:]
    col = dict(zip(header, degraded[0], strict=True))
    assert (col["node"], col["link"], col["width (lanes)"], col["health"]) == ("cn002", "1X QDR", "1", "degraded")
    Device.objects.filter(node__name="cn001").update(hca_type="=cmd|' /C calc'!A0")
    hcas = {r[header.index("HCA model")] for r in csv_rows(viewer.get("/ports.csv", {"node": "cn001"}))[1:]}
    assert hcas == {"'=cmd|' /C calc'!A0"}
    response = viewer.get("/ports.csv", {"state": "sideways"}, status=400)
    assert b"The filter was not applied: state: Select a valid choice" in response.content
    assert 'href="/ports.csv?state=down"' in viewer.text("/", {"state": "down"})


def test_it_writes_a_roce_ports_link_and_speed_in_ethernet_words_in_the_ports_csv(viewer, faulty):
    faulty.fabric.add_fault("cn003/mlx5_0/1:speed=QDR")  # mlx5 reports a 40GbE link as 4X QDR
    faulty.poll()
    rows = csv_rows(viewer.get("/ports.csv", {"layer": "Ethernet"}))
    cols = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    by_port = {(c["node"], c["device"], c["port"]): c for c in cols}
    slow = by_port["cn003", "mlx5_0", "1"]
    assert (slow["link"], slow["speed"], slow["expected link"]) == ("100GbE trained at 40GbE", "40GbE", "100GbE")
    assert slow["HCA model"] == "ConnectX-6 Dx (MT4125)"
    html = viewer.text("/ports/cn003/mlx5_0/1/")
    assert "100GbE trained at 40GbE" in html  # the page's words
    speeds = {c["speed"] for c in cols}
    assert not speeds & {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR", "NDR"}, speeds


def test_it_writes_the_far_end_as_the_pages_name_it_in_the_ports_csv(viewer, switches):
    rows = csv_rows(viewer.get("/ports.csv"))
    cols = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    cabled = Port.objects.select_related("device__node").exclude(peer_label="").filter(device__node__kind="host")
    assert cabled.exists()
    for port in cabled:
        node, device = port.device.node.name, port.device.name
        row = next(c for c in cols if (c["node"], c["device"], c["port"]) == (node, device, str(port.number)))
        assert row["far end"] == port.peer_label and port.peer_label.startswith("leaf0")
        far_end = viewer.text(f"/ports/{node}/{device}/{port.number}/").split('<dd class="far-end">')[1]
        assert f">{port.peer_label}</a>" in far_end.split("</dd>")[0]
    assert all(
        c["far end"] == ""
        for c in cols
        if not Port.objects.filter(device__node__name=c["node"], device__name=c["device"], number=c["port"])
        .exclude(peer_label="")
        .exists()
    )
