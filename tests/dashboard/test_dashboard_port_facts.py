"""Covers fabricweb/alerts/payload.py, fabricweb/health/records/context.py, fabricweb/inventory/portfacts/,
fabricweb/exporter/views.py, fabricweb/api/views/ports.py, fabricweb/dashboard/views/port.py,
fabricweb/dashboard/views/node.py, fabricweb/api/views/nodes.py, fabricweb/dashboard/views/wall.py,
fabricweb/dashboard/views/overview.py.

Every surface shows a port's facts as fabricweb.inventory.portfacts states them, on SQLite and PostgreSQL:
the dashboard's pages and chart data, the JSON API, /metrics and the alerts' payload, through the real ingest
and health engine. A down port has no link (whatever its `rate` file says), a stale node's ports are
unknown, a port never connected is not counted down, info-level advice is not listed among the problems."""

from __future__ import annotations

import copy
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from fabricweb.alerts.payload import event_item
from fabricweb.api.models import ApiToken
from fabricweb.fabric.models import ExpectedLink
from fabricweb.health.models import Event, LinkPolicy
from fabricweb.health.records import context
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import Api, event, expect
from tests.dashboard.dashboard_support import Browser, make_user
from tests.fixture_trees import NODE_EXPORTER, T0, later, snapshot

DOWN_POLLING = {"state": {"id": 1, "name": "DOWN"}, "phys_state": {"id": 2, "name": "Polling"}}
# What the kernel prints in `rate` for a port with no link: not a link.
NO_LINK_RATE = {"rate": {"gbps": 10.0, "lanes": 4, "speed": "SDR"}}
NO_SM = {"state": {"id": 2, "name": "INIT"}, "phys_state": {"id": 5, "name": "LinkUp"}}


def set_port(snap: dict, device: str, number: int, **changes) -> None:
    port = next(p for d in snap["devices"] if d["name"] == device for p in d["ports"] if p["port"] == number)
    port.update(copy.deepcopy(changes))


def drop_port(snap: dict, device: str, number: int) -> None:
    dev = next(d for d in snap["devices"] if d["name"] == device)
    dev["ports"] = [p for p in dev["ports"] if p["port"] != number]


def scrape(client: Client) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.getvalue().decode()


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def by_name(text: str, name: str) -> dict[frozenset, float]:
    return {labels: v for (n, labels), v in samples(text).items() if n == name}


def port_row(node: str, device: str, number: int) -> Port:
    return Port.objects.get(device__node__name=node, device__name=device, number=number)


# Each port of the world and the status it must show everywhere.
EXPECTED = {
    ("cn001", "hfi1_0", 1): "no_subnet_manager",  # LinkUp, INIT: no subnet manager activated it
    ("cn001", "mlx4_0", 1): "down",  # was up, now DOWN/Polling with the kernel's 10 Gb/sec (4X SDR)
    ("cn001", "mlx4_0", 2): "not_connected",  # DOWN/Polling since its first poll, nothing expects it up
    ("cn001", "mlx5_0", 1): "degraded",  # 1X EDR where 4X EDR is expected
    ("cn002", "hfi1_0", 1): "unknown",  # cn002 stopped reporting: all its ports
    ("cn002", "mlx4_0", 1): "unknown",
    ("cn002", "mlx4_0", 2): "unknown",
    ("cn002", "mlx5_0", 1): "unknown",
    ("cn003", "i40iw0", 1): "down",  # never up, but a link policy says it should be
    ("cn003", "mlx4_0", 1): "up",
    ("cn003", "mlx4_0", 2): "vanished",  # gone from cn003's second snapshot
    ("cn004", "hfi1_0", 1): "up",
    ("cn004", "mlx4_0", 1): "up",
    ("cn004", "mlx4_0", 2): "down",  # never up, but the expected cabling names it
    ("cn004", "mlx5_0", 1): "up",
}


@pytest.fixture
def world(each_db):
    now = timezone.now()
    LinkPolicy.objects.create(name="cn003 storage port", node_glob="cn003", device_glob="i40iw0", port_glob="1")
    ExpectedLink.objects.create(
        a_node="leaf01", a_port=3, a_label="leaf01 port 3", b_node="cn004", b_device="mlx4_0", b_port=2,
        b_label="cn004 mlx4_0/2", source="tests", imported_at=now,
    )  # fmt: skip
    context.forget()  # the policy and the cabling, read by the next batch

    at = now - timedelta(seconds=20)  # polls of the last minute: the charts' last hour holds them
    s0 = snapshot(host="cn001", at=at)
    set_port(s0, "hfi1_0", 1, **NO_SM)
    set_port(s0, "mlx4_0", 2, **DOWN_POLLING, **NO_LINK_RATE)
    s1 = later(s0, 10)
    set_port(s1, "mlx4_0", 1, **DOWN_POLLING, **NO_LINK_RATE)
    ingest_snapshot(s0, now=now - timedelta(seconds=10))
    ingest_snapshot(s1, now=now)
    expect(port_row("cn001", "mlx5_0", 1), "EDR", 4, "policy 'cn-edr'")

    ingest_snapshot(snapshot(host="cn002", at=at - timedelta(hours=1)), now=now - timedelta(hours=1))
    Node.objects.filter(name="cn002").update(stale=True)  # as health.records.staleness marks it (and the clock says)

    n0 = snapshot(NODE_EXPORTER, host="cn003", at=at)
    set_port(n0, "i40iw0", 1, **DOWN_POLLING, **NO_LINK_RATE)
    n1 = later(n0, 10)
    drop_port(n1, "mlx4_0", 2)
    ingest_snapshot(n0, now=now - timedelta(seconds=10))
    ingest_snapshot(n1, now=now)

    c0 = snapshot(host="cn004", at=at)
    set_port(c0, "mlx4_0", 2, **DOWN_POLLING, **NO_LINK_RATE)
    ingest_snapshot(c0, now=now)
    return now


@pytest.fixture
def viewer(each_db) -> Browser:
    return Browser(make_user("victor", "viewer"))


@pytest.fixture
def api(each_db) -> Api:
    user = make_user("noc", None)
    return Api(Client(), ApiToken.issue(user, "tests")[1])


def api_ports(api: Api) -> dict[tuple[str, str, int], dict]:
    body = api.json("/api/v1/ports")
    return {(p["node"], p["device"], p["port"]): p for p in body["ports"]}


def test_every_surface_shows_each_port_in_the_status_the_one_module_gives(world, viewer, api, client):
    rows = {
        (p.device.node.name, p.device.name, p.number): p
        for p in portfacts.annotate(Port.objects.select_related("device__node"))
    }
    assert {k: p.status for k, p in rows.items()} == EXPECTED  # SQL
    assert {k: str(portfacts.status_now(p)) for k, p in rows.items()} == EXPECTED  # Python
    assert {k: p["status"] for k, p in api_ports(api).items()} == EXPECTED  # the API
    for (node, device, number), status in EXPECTED.items():  # the pages, whose health may add "erroring"
        page = viewer.get(f"/ports/{node}/{device}/{number}/")
        assert page.context["health"] in (status, "erroring"), (node, device, number)
    metrics = samples(scrape(client))
    up = {(dict(k)["node"], dict(k)["device"], int(dict(k)["port"])): v for (n, k), v in metrics.items()
          if n == "infiniband_port_up"}  # fmt: skip
    for key, status in EXPECTED.items():
        if status == "unknown":
            assert key not in up, key  # a stale node's port says nothing of its state
        else:
            assert up[key] == (1.0 if status in portfacts.UP_STATUSES else 0.0), key
            assert rows[key].up == bool(up[key]) == api_ports(api)[key]["up"], key


def test_a_down_port_shows_no_link_on_its_page(world, viewer):
    page = viewer.get("/ports/cn001/mlx4_0/1/")
    assert page.context["link"] is None and page.context["health"] == "down"
    html = page.content.decode()
    assert re.search(r'<dd class="link">no link</dd>', html)
    assert "10 Gb/s" not in html and "4X SDR" not in html
    row = re.search(r'<a href="/ports/cn001/mlx4_0/1/">mlx4_0/1</a></td>(.*?)</tr>', viewer.text("/nodes/cn001/"), re.S)
    assert '<td class="rate" colspan="3">no link</td>' in row[1] and "10 Gb/s" not in row[1]


def test_a_down_port_draws_no_capacity_line_in_its_chart(world, viewer):
    data = viewer.get("/ports/cn001/mlx4_0/1/series", {"range": "1h"}).json()
    assert data["capacity_bytes_per_second"] is None and data["link"] is None  # charts.js draws no line
    assert data["link_gbps"][-1] is None and data["link_name"][-1] is None  # the poll it was down: no link
    up = viewer.get("/ports/cn001/mlx5_0/1/series", {"range": "1h"}).json()
    assert up["capacity_bytes_per_second"] == 25e9 / 8 and up["link"] == "1X EDR"


def test_a_down_port_shows_no_link_in_the_api(world, api):
    body = api.json("/api/v1/ports/cn001/mlx4_0/1")
    assert (body["status"], body["up"], body["link"]) == ("down", False, None)
    assert body["state"]["name"] == "Down" and body["phys_state"]["name"] == "Polling"
    assert body["last_sample"]["link"] is None
    assert api.json("/api/v1/ports/cn001/mlx4_0/1")["best_link"]["name"] == "4X QDR"  # what it ran at: history


def test_a_down_port_shows_no_link_in_metrics(world, client):
    text = scrape(client)
    port = frozenset({"node": "cn001", "device": "mlx4_0", "port": "1"}.items())
    assert by_name(text, "infiniband_port_up")[port] == 0.0
    assert port not in by_name(text, "infiniband_rate_bytes_per_second")
    detail = client.get("/metrics", {"set": "detail"}).getvalue().decode()  # the lanes and info: ?set=detail's
    assert port in by_name(detail, "infiniband_port_expected_lanes")
    assert port not in by_name(detail, "infiniband_port_lanes")
    (info,) = [dict(k) for k in by_name(detail, "infiniband_port_info") if port <= k]
    assert (info["speed"], info["width"]) == ("", "")
    assert by_name(text, "infiniband_port_expected_up")[port] == 1.0  # it has been up: down is an outage


def test_a_stale_nodes_ports_show_unknown_on_every_surface(world, viewer, api, client):
    assert {p["status"] for k, p in api_ports(api).items() if k[0] == "cn002"} == {"unknown"}
    detail = api.json("/api/v1/ports/cn002/mlx4_0/1")
    assert (detail["status"], detail["up"], detail["degraded"]) == ("unknown", None, None)
    assert api.json("/api/v1/nodes/cn002")["ports"]["unknown"] == 4
    html = viewer.text("/nodes/cn002/")
    assert html.count('<tr class="h-unknown">') == 4 and "h-up" not in html
    page = viewer.get("/ports/cn002/mlx4_0/1/")
    assert page.context["health"] == "unknown" and "unknown: the node is stale" in page.content.decode()
    grid = viewer.get("/").context["grid"]
    assert re.findall(r'<a class="c (\w+)" href="/ports/cn002/', grid) == ["unknown"] * 4
    text = scrape(client)
    assert by_name(text, "infiniband_node_up")[frozenset({("node", "cn002")})] == 0.0
    for name in ("infiniband_port_up", "infiniband_state_id", "infiniband_rate_bytes_per_second"):
        assert not any(dict(k).get("node") == "cn002" for k in by_name(text, name)), name


def test_a_never_connected_port_is_not_connected_not_down(world, viewer, api, client):
    response = viewer.get("/")
    counts = response.context["counts"]
    # Down: cn001 mlx4_0/1 (was up), cn003 i40iw0/1 (a policy), cn004 mlx4_0/2 (the expected cabling).
    assert (counts.down, counts.not_connected, counts.no_subnet_manager, counts.vanished) == (3, 1, 1, 1)
    assert counts.unknown == 4 and counts.stale_nodes == 1
    cell = re.search(r'<a class="c [^"]+" href="/ports/cn001/mlx4_0/2/"[^>]*>[^<]*</a>', str(response.context["grid"]))
    assert cell[0] == '<a class="c not_connected" href="/ports/cn001/mlx4_0/2/">–</a>'  # neutral, no ✕
    assert viewer.get("/ports/cn001/mlx4_0/2/").context["health"] == "not_connected"
    assert api.json("/api/v1/nodes/cn001")["ports"] == {
        "total": 4, "down": 1, "no_subnet_manager": 1, "degraded": 1, "vanished": 0, "unknown": 0, "up": 0,
        "not_connected": 1,
    }  # fmt: skip
    assert [p["port"] for p in api.json("/api/v1/ports", {"state": "not_connected"})["ports"]] == [2]
    spare = frozenset({"node": "cn001", "device": "mlx4_0", "port": "2"}.items())
    assert by_name(scrape(client), "infiniband_port_expected_up")[spare] == 0.0
    # No rule raises an event for it: it is no outage.
    assert not Event.objects.filter(port=port_row("cn001", "mlx4_0", 2)).exists()


def test_a_policy_or_the_expected_cabling_makes_a_never_up_port_down(world, api):
    assert (port_row("cn003", "i40iw0", 1).expect_up, port_row("cn004", "mlx4_0", 2).expect_up) == (True, True)
    assert port_row("cn001", "mlx4_0", 2).expect_up is None  # nobody said: its history (never up) decides
    assert [p["node"] for p in api.json("/api/v1/ports", {"state": "down"})["ports"]] == ["cn001", "cn003", "cn004"]


def test_info_advice_is_listed_apart_from_the_problems(world, viewer):
    Event.objects.all().delete()
    p = port_row("cn001", "mlx5_0", 1)
    event(p, "capped_counters", "info", T0, message="cn001 mlx5_0/1: port_xmit_wait stuck at its maximum")
    event(p, "degraded", "critical", T0, message="cn001 mlx5_0/1: trained at 25 Gb/s (1X EDR)")
    response = viewer.get("/")
    assert [e.kind for e in response.context["problems"]] == ["degraded"]
    assert [e.kind for e in response.context["advice"]] == ["capped_counters"]
    html = response.content.decode()
    problems, advice = html.split("<h2>Problems")[1].split("<h2>Advice")
    assert "stuck at its maximum" not in problems and "stuck at its maximum" in advice
    assert "Advice (1 open, not problems)" in html
    assert "stuck at its maximum" not in viewer.text("/wall/")  # the wall shows problems only


def test_the_alerts_payload_names_the_link_as_the_one_module_does(world):
    Event.objects.all().delete()
    at = T0 + timedelta(minutes=1)
    down = event(port_row("cn001", "mlx4_0", 1), "down", "critical", at)
    slow = event(port_row("cn001", "mlx5_0", 1), "degraded", "critical", at)
    stale = event(port_row("cn002", "mlx4_0", 1), "symbol_errors", "warning", at)
    gone = event(port_row("cn003", "mlx4_0", 2), "vanished", "warning", at)
    items = {e.pk: event_item(Event.objects.select_related("node", "device", "port").get(pk=e.pk)) for e in
             (down, slow, stale, gone)}  # fmt: skip
    assert items[down.pk]["actual_link"] == "DOWN / Polling"
    assert (items[slow.pk]["actual_link"], items[slow.pk]["expected_link"]) == ("1X EDR", "4X EDR")
    assert items[stale.pk]["actual_link"] == "unknown"
    assert items[gone.pk]["actual_link"] == "vanished"
