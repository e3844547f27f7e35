"""Covers fabricweb/api/serializers.py, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/port.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/wall.py, fabricweb/dashboard/views/actions.py,
fabricweb/dashboard/views/overview.py.

Pages on SQLite and PostgreSQL: login, what each page shows, and bad input answered with a message."""

from __future__ import annotations

import re
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import escape

from fabricweb.api.serializers import pcie_link
from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Node
from tests.dashboard.dashboard_support import Browser

PAGES = ["/", "/nodes/cn001/", "/ports/cn001/mlx5_0/1/", "/ports/cn001/mlx5_0/1/series", "/events/", "/wall/"]


def test_every_page_sends_an_anonymous_visitor_to_the_login(each_db, faulty):
    anonymous = Browser()
    for page in PAGES:
        response = anonymous.get(page, status=302)
        assert response["Location"].startswith("/login/?next="), page
    assert "Log in" in anonymous.text("/login/")


def test_the_overview_counts_ports_and_lists_the_degraded_port_with_its_reason(viewer, faulty):
    response = viewer.get("/")
    counts = response.context["counts"]
    assert (counts.nodes, counts.stale_nodes) == (3, 0)
    assert (counts.down, counts.degraded) == (1, 1)
    assert counts.ports_up == counts.ports - 1
    assert counts.open_events["critical"] >= 1
    html = response.content.decode()
    degraded = Event.objects.get(kind="degraded", resolved_at__isnull=True)
    assert degraded.message.startswith("cn002 mlx4_0/1: ")
    assert "1X" in degraded.message and escape(degraded.message) in html
    # The grid: colour class AND a mark, linking to the port.
    assert '<a class="c degraded" href="/ports/cn002/mlx4_0/1/" title="cn002 mlx4_0/1: degraded">▼</a>' in html
    assert '<a class="c down" href="/ports/cn003/mlx5_1/1/" title="cn003 mlx5_1/1: down">✕</a>' in html


def test_the_problem_list_puts_critical_before_warning(viewer, faulty):
    problems = list(viewer.get("/").context["problems"])
    ranks = [{"critical": 0, "warning": 1, "info": 2}[e.severity] for e in problems]
    assert ranks == sorted(ranks) and {e.kind for e in problems[:2]} == {"down", "degraded"}


def test_overview_filters_narrow_the_grid(viewer, faulty):
    def shown(**query):
        cells = re.findall(r'href="/ports/([^"]+)/"', viewer.text("/", query).split('class="grid"')[1])
        return sorted(cells)

    assert shown(state="down") == ["cn003/mlx5_1/1"]
    assert shown(state="degraded") == ["cn002/mlx4_0/1"]
    assert shown(problems="on") == ["cn002/mlx4_0/1", "cn003/mlx5_1/1"]
    assert shown(node="cn00?", device="mlx4_*") == ["cn002/mlx4_0/1", "cn002/mlx4_0/2"]
    assert shown(width="1") == ["cn002/mlx4_0/1"]
    assert shown(hca="MT4099", layer="InfiniBand", speed="QDR") == ["cn002/mlx4_0/1", "cn002/mlx4_0/2"]
    assert shown(node="nomatch*") == []


def test_it_shows_filters_and_no_pager_in_the_overview_filter_bar(viewer, faulty):
    html = viewer.text("/", {"advice": "1", "page": "1"})
    bar = html.split('<form class="filters"')[1].split("</form>")[0]
    names = re.findall(r'name="([a-z]+)"', bar)
    assert names == ["node", "device", "state", "speed", "width", "hca", "layer", "problems", "sort"]
    assert ">advice <" not in bar and ">page <" not in bar
    assert "Advice (" in html  # the advice is still listed, and ?advice= still pages it


def test_a_bad_filter_is_a_message_not_a_server_error(viewer, faulty):
    for query, words in (
        ({"node": "cn0';--"}, "node: use letters, digits"),
        ({"state": "sideways"}, "state: Select a valid choice"),
        ({"width": "3"}, "width: Select a valid choice"),
        ({"page": "-1"}, "page: Ensure this value is greater than or equal to 1"),
    ):
        html = viewer.text("/", query, status=400)
        assert "The filter was not applied" in html and words in html, query
    assert "kind: use lower-case letters" in viewer.text("/events/", {"kind": "DOWN!"}, status=400)
    assert "status: Select a valid choice" in viewer.text("/events/", {"status": "maybe"}, status=400)


def test_the_node_page_shows_devices_ports_and_events(viewer, faulty):
    html = viewer.text("/nodes/cn003/")
    device = Device.objects.get(node__name="cn003", name="mlx5_1")
    pcie = f"trained {pcie_link(device)['name']}, capable {pcie_link(device)['max_name']}"
    for words in ("Node cn003", device.hca_type, device.fw_ver, "mlx5_1/1", "Down", "Polling", "Gb/s", pcie):
        assert words in html, words
    # its down event
    assert '<a href="/ports/cn003/mlx5_1/1/">cn003 mlx5_1/1</a>: <span class="what">port down</span>' in html


def test_the_node_page_says_why_its_snapshots_are_refused_and_escapes_the_reason(viewer, faulty):
    Node.objects.filter(name="cn002").update(
        refused_reason="snapshot would add 512 ports <b>now</b>", refused_at=timezone.now(), refused_snapshots=40
    )
    html = viewer.text("/nodes/cn002/")
    assert "snapshots refused</span> snapshot would add 512 ports &lt;b&gt;now&lt;/b&gt;" in html
    assert "40 refused in all" in html
    Node.objects.filter(name="cn002").update(refused_reason="")
    assert "40 snapshots refused over its budget, the last at " in viewer.text("/nodes/cn002/")
    assert "refused" not in viewer.text("/nodes/cn001/")


def test_unknown_node_port_and_event_are_404(operator, faulty):
    operator.get("/nodes/nosuch/", status=404)
    operator.get("/ports/cn001/mlx9_0/1/", status=404)
    operator.get("/ports/cn001/mlx5_0/7/series", status=404)
    operator.post("/events/999999/acknowledge", status=404)
    operator.post("/silences/999999/lift", status=404)


def test_the_port_page_and_its_series_carry_the_data_points(viewer, faulty):
    html = viewer.text("/ports/cn001/mlx5_0/1/")
    assert "200 Gb/s (4X HDR)" in html and 'id="chart-traffic"' in html and "plotly/plotly.min.js" in html
    series = viewer.get("/ports/cn001/mlx5_0/1/series", {"range": "1h"}).json()
    assert series["source"] == "raw samples" and len(series["t"]) == 4
    # The first poll has no delta (unknown, a gap), the later ones a rate in bytes/s.
    assert series["rx"][0] is None and all(v > 0 for v in series["rx"][1:])
    assert series["capacity_bytes_per_second"] == 25e9 and series["link"] == "4X HDR"
    assert set(series["errors"]) >= {"symbol_error", "link_downed"}
    assert viewer.get("/ports/cn001/mlx5_0/1/series", {"range": "24h"}).json()["source"] == "5-minute rollups"
    assert viewer.get("/ports/cn001/mlx5_0/1/series", {"range": "forever"}, status=400).json()["error"]
    assert "range: expected one of" in viewer.text("/ports/cn001/mlx5_0/1/", {"range": "x"}, status=400)


def test_the_link_chart_steps_down_where_the_port_trained_narrower(viewer, faulty):
    series = viewer.get("/ports/cn002/mlx4_0/1/series").json()
    assert series["link_name"][-1] == "1X QDR" and series["link_name"][0] == "4X QDR"
    assert series["expected"] == "4X QDR" and series["expected_gbps"] == 40.0


def test_a_missing_poll_is_a_gap_not_a_line(viewer, faulty):
    faulty.poll(seconds=120)  # twelve polls' worth of silence
    series = viewer.get("/ports/cn001/mlx5_0/1/series").json()
    gap = series["t"].index(max(series["t"][:-1]))  # the inserted point before the last real one
    assert series["rx"][gap] is None and series["rx"][-1] is not None


def test_the_events_page_lists_open_and_resolved_events(viewer, faulty):
    html = viewer.text("/events/")
    assert '<a href="/ports/cn003/mlx5_1/1/">cn003 mlx5_1/1</a>: <span class="what">port down</span>' in html
    assert "Acknowledge" not in html
    assert viewer.get("/events/", {"status": "resolved"}).context["events"].paginator.count == 0
    assert (
        viewer.get("/events/", {"severity": "critical", "node": "cn00*", "kind": "do*"})
        .context["events"]
        .paginator.count
        == 1
    )


def test_device_strings_are_shown_as_text_never_markup(viewer, faulty):
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    Device.objects.filter(node__name="cn001").update(node_desc=evil, fw_ver=evil, board_id=evil)
    html = viewer.text("/nodes/cn001/")
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html


def test_stale_data_is_said_on_every_page(viewer, faulty):
    assert "Stale data" not in viewer.text("/")
    # Nothing stored for 5 minutes, and every node has missed its polls (health.records.staleness marked them).
    Node.objects.update(last_ingested_at=timezone.now() - timedelta(minutes=5), stale=True)
    for page in ("/", "/events/", "/nodes/cn001/", "/ports/cn001/mlx5_0/1/"):
        assert "Stale data: nothing stored for" in viewer.text(page), page
    assert viewer.get("/").context["counts"].stale_nodes == 3
    assert "cn001 (stale)" in viewer.text("/")


def test_the_overview_costs_the_same_queries_for_more_nodes(each_db, viewer, tmp_path):
    from tests.api.api_support import SimFabric

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            viewer.get("/")
        return len(seen)

    small = SimFabric(tmp_path / "a", 2, start=timezone.now() - timedelta(minutes=1))
    small.poll()
    few = queries()
    Node.objects.all().delete()
    big = SimFabric(tmp_path / "b", 12, start=timezone.now() - timedelta(minutes=1))
    big.fabric.add_fault("cn004/mlx5_0/1:down", "cn005/mlx5_0/1:down")
    big.poll()
    assert queries() == few


def test_static_files_are_served_by_the_app_itself(viewer):
    for path in ("/static/dashboard/dashboard.css", "/static/dashboard/live.js", "/static/plotly/plotly.min.js"):
        response = viewer.get(path)
        assert b"".join(response.streaming_content if response.streaming else [response.content])


def test_the_node_page_shows_the_first_100_read_errors_and_counts_the_rest(viewer, faulty):
    errors = [{"path": f"/sys/class/infiniband/mlx5_0/ports/1/counters/c{i}", "reason": "EINVAL"} for i in range(130)]
    Node.objects.filter(name="cn001").update(read_errors=errors)
    html = viewer.text("/nodes/cn001/")
    assert "counters/c99</code>: EINVAL" in html and "counters/c100<" not in html
    assert "… and 30 more" in html
