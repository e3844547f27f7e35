"""Covers fabricweb/alerts/payload.py, fabricweb/dashboard/grafana.py, fabricweb/health/records/critical.py,
fabricweb/dashboard/views/port.py, fabricweb/api/views/ports.py, fabricweb/api/views/events.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/node.py.

Words an operator reads, on SQLite and PostgreSQL, through the simulator, the real ingest and health engine:
a RoCE port's link in Ethernet words (`100GbE trained at 40GbE`) on the port page, in the API, in the event
and the notification, while an InfiniBand port keeps ibstat's (`4X HDR`); why a critical problem is critical
(the link policy, or the rule) on the problem and event rows; the port's Grafana panel when Grafana is set."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from fabricweb.alerts.payload import event_item
from fabricweb.api.models import ApiToken
from fabricweb.dashboard.grafana import DASHBOARD_UID, PORT_PANEL, port_panel_url
from fabricweb.health.models import Event, LinkPolicy
from fabricweb.health.records.critical import critical_reason
from tests.api.api_support import Api, SimFabric
from tests.dashboard.dashboard_support import Browser, make_user

ROCE = "/ports/cn006/mlx5_0/1/"
ROCE_TRAINED = "100GbE trained at 40GbE"
ROW = re.compile(r'<(li|tr) class="sev-(\w+)" data-event="\d+">(.*?)</\1>', re.S)  # a problem or event row
GRAFANA_JSON = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "fabricweb.json"


@pytest.fixture
def world(each_db, tmp_path) -> SimFabric:
    """6 nodes (cn006 is RoCE): cn006's 100GbE port trained at 40GbE (mlx5's 4X QDR), cn004's cx7 at 4X HDR
    where 4X NDR is expected, cn003's port down under a link policy, cn005's down with none."""
    LinkPolicy.objects.create(name="compute-hdr", node_glob="cn003", device_glob="mlx5_0", port_glob="1")
    fab = SimFabric(tmp_path / "sim", 6, start=timezone.now() - timedelta(minutes=2))
    fab.poll()
    fab.poll()
    fab.fabric.add_fault(
        "cn006/mlx5_0/1:speed=QDR", "cn004/mlx5_0/1:speed=HDR", "cn003/mlx5_0/1:down", "cn005/mlx5_0/1:down"
    )
    fab.poll()
    fab.poll()
    return fab


def open_event(kind: str, node: str) -> Event:
    return Event.objects.select_related("port").get(kind=kind, node__name=node, resolved_at__isnull=True)


def text_of(page: str) -> str:
    """The page's text: tags dropped, entities and spaces as a reader sees them."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_roce_port_below_its_speed_reads_in_ethernet_words_everywhere(world):
    browser = Browser(make_user("olga", "operator"))
    page = text_of(browser.text(ROCE))
    assert f"40 Gb/s ({ROCE_TRAINED})" in page
    assert "100 Gb/s (100GbE)" in page  # expected
    assert "4X QDR" not in page and "4X EDR" not in page

    degraded = open_event("degraded", "cn006")
    assert degraded.severity == "critical"  # below its own past
    assert ROCE_TRAINED in degraded.message
    assert "speed downgrade (10 Gb/s lanes where 25 Gb/s expected)" in degraded.message
    assert (degraded.details["link"], degraded.details["expected"]) == ("40GbE", "100GbE")
    assert "4X" not in degraded.message

    api = Api(browser.client, ApiToken.issue(browser.user, "tests")[1])
    port = api.json("/api/v1/ports/cn006/mlx5_0/1")
    assert port["link"]["name"] == ROCE_TRAINED
    assert (port["link"]["gbps"], port["expected_link"]["name"]) == (40.0, "100GbE")
    events = api.json("/api/v1/events", {"node": "cn006"})
    assert any(ROCE_TRAINED in e["message"] for e in events["events"])

    assert event_item(degraded)["actual_link"] == ROCE_TRAINED
    assert ROCE_TRAINED in text_of(browser.text("/events/"))
    assert ROCE_TRAINED in text_of(browser.text("/nodes/cn006/"))


def test_an_infiniband_port_keeps_ibstat_words(world):
    browser = Browser(make_user("victor", "viewer"))
    healthy = text_of(browser.text("/ports/cn001/mlx5_0/1/"))
    assert "200 Gb/s (4X HDR)" in healthy and "GbE" not in healthy

    degraded = open_event("degraded", "cn004")
    assert "trained at 200 Gb/s (4X HDR), expected 400 Gb/s (4X NDR): speed downgrade (HDR where NDR expected)" in (
        degraded.message
    )
    api = Api(browser.client, ApiToken.issue(browser.user, "tests")[1])
    assert api.json("/api/v1/ports/cn004/mlx5_0/1")["link"]["name"] == "4X HDR"
    assert api.json("/api/v1/ports/cn001/mlx5_0/1")["link"]["name"] == "4X HDR"


def test_a_critical_row_says_the_policy_or_the_rule_that_made_it_critical(world):
    by_policy = "critical: link policy 'compute-hdr' expects it up"
    by_rule = "critical: a port that was up went down"
    below_past = "critical: trained below a link this port has held before (100GbE)"
    assert open_event("down", "cn003").details["expected_up_because"] == "policy 'compute-hdr' expects it up"

    browser = Browser(make_user("olga", "operator"))
    for path in ("/", "/events/"):
        rows = [(sev, text_of(body)) for _, sev, body in ROW.findall(browser.text(path))]
        critical = [t for sev, t in rows if sev == "critical"]
        assert any("cn003 mlx5_0/1" in t and by_policy in t for t in critical), path
        assert any("cn005 mlx5_0/1" in t and by_rule in t for t in critical), path
        assert any(ROCE_TRAINED in t and below_past in t for t in critical), path
        assert not any("critical:" in t for sev, t in rows if sev != "critical"), path


def test_the_critical_reason_names_what_set_it():
    assert critical_reason("degraded", {"origin": "policy", "source": "policy 'cn-hdr' (HDR), the rest learned"}) == (
        "critical: link policy 'cn-hdr' (HDR) sets the link it should run at"
    )
    assert critical_reason("link_integrity_errors", {}) == (
        "critical: the rule: link integrity errors over the port's limit are always critical"
    )
    assert critical_reason("flapping", {"link_downs_per_hour": 7.0}) == (
        "critical: the link went down 7 times in the last hour: over the flapping rule's limit"
    )
    # An event stored before its details said why: the port's own expected_source does.
    assert critical_reason("degraded", {}, "policy 'cn-hdr'") == (
        "critical: link policy 'cn-hdr' sets the link it should run at"
    )
    assert critical_reason("no_subnet_manager", None) == (
        "critical: a port that was up, and without a subnet manager it cannot become ACTIVE"
    )


def test_the_port_page_links_to_its_grafana_panel_only_when_grafana_is_set(world, settings):
    browser = Browser(make_user("victor", "viewer"))
    settings.FABRIC_GRAFANA_URL = None
    assert "grafana-link" not in browser.text(ROCE)

    settings.FABRIC_GRAFANA_URL = "https://grafana.example.org/noc/"
    page = browser.text(ROCE)
    hrefs = re.findall(r'<a class="grafana-link" href="([^"]+)"', page)
    assert hrefs == [
        "https://grafana.example.org/noc/d/fabricweb-infiniband/"
        "?var-node=cn006&amp;var-device=mlx5_0&amp;var-port=1&amp;viewPanel=301"
    ]  # & escaped in the attribute


def test_the_grafana_url_quotes_names_and_points_at_the_shipped_panel():
    url = port_panel_url("https://g.example.org", 'cn"7<b>&x', "mlx5_0", 2)
    assert url == (
        "https://g.example.org/d/fabricweb-infiniband/?var-node=cn%227%3Cb%3E%26x&var-device=mlx5_0&var-port=2&viewPanel=301"
    )
    assert port_panel_url(None, "cn001", "mlx5_0", 1) is None
    shipped = json.loads(GRAFANA_JSON.read_text())
    assert shipped["uid"] == DASHBOARD_UID
    panel = next(p for p in shipped["panels"] if p.get("id") == PORT_PANEL)
    assert panel["title"] == "Throughput against capacity"
    names = {v["name"] for v in shipped["templating"]["list"]}
    assert {"node", "device", "port"} <= names


def test_a_grafana_address_that_is_not_an_http_url_stops_start_up():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECRET", "DATABASE"))}
    env.update(DEBUG="1", FABRIC_GRAFANA_URL="javascript:alert(1)")
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=GRAFANA_JSON.parents[3], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "FABRIC_GRAFANA_URL='javascript:alert(1)' is not an http(s) URL" in done.stderr
