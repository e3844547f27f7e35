"""Covers fabricweb/inventory/portfacts/, fabricweb/health/records/staleness.py, fabricweb/api/views/nodes.py,
fabricweb/api/views/ports.py; through them fabricweb/inventory/portfacts/cables.py,
fabricweb/inventory/portfacts/links.py, fabricweb/inventory/portfacts/pcie.py,
fabricweb/inventory/portfacts/statuses.py.

GET /api/v1/nodes and /api/v1/nodes/<name> on ingested snapshots."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Device
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import (
    NODE_EXPORTER,
    T0,
    event,
    expect,
    later,
    port,
    snapshot,
    store_fixture_node,
    without_engine_events,
)


def test_nodes_list_counts_ports_and_open_events_per_node(each_db, api):
    store_fixture_node("cn001")
    ingest_snapshot(snapshot(NODE_EXPORTER, host="cn002"))
    slow = port("cn001", "mlx5_0", 1)
    expect(slow, "EDR", 4, "policy 'cn-edr'")
    without_engine_events()
    event(slow, "link_degraded", "critical", T0)
    event(slow, "symbol_errors", "warning", T0 + timedelta(seconds=10))
    event(slow, "flapping", "critical", T0 - timedelta(hours=2), resolved=T0 - timedelta(hours=1))

    body = api.json("/api/v1/nodes")

    assert [n["name"] for n in body["nodes"]] == ["cn001", "cn002"] and body["next"] is None
    cn001 = body["nodes"][0]
    assert cn001["url"] == "/api/v1/nodes/cn001"
    assert cn001["ports"] == ports(total=4, up=3, degraded=1)  # by status: each port counted once
    assert cn001["open_events"] == {"critical": 1, "warning": 1, "info": 0}  # the resolved one left out
    assert cn001["last_collected_at"] == "2026-03-01T12:00:10Z"
    assert cn001["last_ingested_at"].endswith("Z") and cn001["stale"] is False
    assert body["nodes"][1]["open_events"] == {"critical": 0, "warning": 0, "info": 0}


def test_a_node_is_stale_once_it_missed_its_polls_and_never_by_the_clock_alone(each_db, api, settings):
    from fabricweb.health.records.staleness import check_stale

    settings.FABRIC_POLL_INTERVAL = 10.0
    ingest_snapshot(snapshot(host="cn001"), now=timezone.now() - timedelta(seconds=31))
    ingest_snapshot(snapshot(host="cn002"), now=timezone.now() - timedelta(seconds=5))
    stale = {n["name"]: n["stale"] for n in api.json("/api/v1/nodes")["nodes"]}
    assert stale == {"cn001": False, "cn002": False}  # quiet for 31 s, but no poll was sent it (beat not running)
    check_stale({"cn001": 3})  # the poll ledger: cn001 has not taken its last three polls
    stale = {n["name"]: n["stale"] for n in api.json("/api/v1/nodes")["nodes"]}
    assert stale == {"cn001": True, "cn002": False}
    assert api.json("/api/v1/nodes/cn001")["stale"] is True
    ingest_snapshot(snapshot(host="cn001", at=T0 + timedelta(seconds=30)))  # it answers again
    assert api.json("/api/v1/nodes/cn001")["stale"] is False


def ports(**counts: int) -> dict[str, int]:
    """A node's or switch's `ports`: the total and every status, those not given 0."""
    return {"total": counts.pop("total"), **dict.fromkeys(portfacts.STATUSES, 0), **counts}


def test_a_port_that_was_up_and_went_down_counts_as_down(each_db, api):
    s0 = snapshot()
    ingest_snapshot(s0)
    s1 = later(s0, 10)
    mlx4 = next(d for d in s1["devices"] if d["name"] == "mlx4_0")
    mlx4["ports"][1].update(state={"id": 1, "name": "DOWN"}, phys_state={"id": 2, "name": "Polling"})
    ingest_snapshot(s1)
    assert api.json("/api/v1/nodes")["nodes"][0]["ports"] == ports(total=4, up=3, down=1)


def test_a_port_never_up_counts_as_not_connected_not_down(each_db, api):
    snap = snapshot()
    mlx4 = next(d for d in snap["devices"] if d["name"] == "mlx4_0")
    mlx4["ports"][1].update(state={"id": 1, "name": "DOWN"}, phys_state={"id": 2, "name": "Polling"})
    ingest_snapshot(snap)
    assert api.json("/api/v1/nodes")["nodes"][0]["ports"] == ports(total=4, up=3, not_connected=1)


def test_node_detail_lists_devices_with_attributes_pcie_and_ports(each_db, api, tmp_path):
    from tests.api.api_support import SimFabric

    fab = SimFabric(tmp_path, 2)
    fab.poll()
    body = api.json("/api/v1/nodes/cn001")

    assert body["name"] == "cn001" and body["ports"]["total"] == 2
    assert body["read_errors"] == [] and body["source"]["pyverbs"] == "not used"
    dev = body["devices"][0]
    assert dev["name"] == "mlx5_0" and dev["hca_type"] == "MT4123"
    assert dev["node_type"] == {"id": 1, "name": "CA"}
    assert dev["fw_ver"] and dev["node_guid"] and dev["node_desc"] == "cn001 mlx5_0"
    assert dev["pcie"]["name"] == "Gen4 x16" and dev["pcie"]["address"] == "0000:3b:00.0"
    assert dev["pcie"]["trained_low"] is False and dev["pcie"]["usable_gbps"] > 200
    assert [p["url"] for p in dev["ports"]] == ["/api/v1/ports/cn001/mlx5_0/1"]
    assert dev["ports"][0]["link"]["name"] == "4X HDR"


def test_an_unknown_node_is_a_json_404(each_db, api):
    assert api.json("/api/v1/nodes/cn999", status=404) == {"error": "no node 'cn999'"}


def test_node_desc_with_markup_comes_back_as_an_escaped_json_string(each_db, api):
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'
    ingest_snapshot(snapshot())
    Device.objects.filter(name="mlx5_0").update(node_desc=hostile)

    response = api.get("/api/v1/nodes/cn001")

    assert response["Content-Type"] == "application/json"
    assert b"<script" not in response.content and b"<img" not in response.content
    assert b"\\u003cscript\\u003e" in response.content
    dev = next(d for d in json.loads(response.content)["devices"] if d["name"] == "mlx5_0")
    assert dev["node_desc"] == hostile  # the exact text, as data


def test_nodes_are_paged_with_a_next_link(each_db, api):
    for name in ("cn001", "cn002", "cn003"):
        ingest_snapshot(snapshot(host=name))
    first = api.json("/api/v1/nodes", {"limit": 2})
    assert [n["name"] for n in first["nodes"]] == ["cn001", "cn002"]
    assert first["next"] == "/api/v1/nodes?limit=2&offset=2"
    second = api.json(first["next"])
    assert [n["name"] for n in second["nodes"]] == ["cn003"] and second["next"] is None


def test_bad_paging_values_are_400s_naming_the_parameter(each_db, api):
    assert api.json("/api/v1/nodes", {"limit": 0}, status=400)["error"].startswith("limit:")
    assert api.json("/api/v1/nodes", {"limit": "ten"}, status=400)["error"].startswith("limit:")
    assert api.json("/api/v1/nodes", {"offset": -1}, status=400)["error"].startswith("offset:")
    assert api.json("/api/v1/nodes", {"limit": 5001}, status=400)["error"].startswith("limit:")
    assert api.json("/api/v1/nodes/cn001", {"verbose": 1}, status=400)["error"].startswith("verbose: unknown")


def test_a_node_with_thousands_of_read_errors_pages_them(api):
    snap = snapshot(host="cn009")
    snap["errors"] = [
        {"path": f"class/infiniband/mlx5_0/ports/1/counters/c{i}", "reason": "EINVAL"} for i in range(1_500)
    ]
    ingest_snapshot(snap)
    body = api.json("/api/v1/nodes/cn009")
    assert len(body["read_errors"]) == 100 and body["read_error_count"] == 1_500
    assert body["read_errors_next"] == "/api/v1/nodes/cn009/read-errors?offset=100"
    page = api.json(body["read_errors_next"])
    assert page["total"] == 1_500 and len(page["read_errors"]) == 500
    assert page["read_errors"][0]["path"].endswith("/c100")
    last = api.json("/api/v1/nodes/cn009/read-errors", {"offset": 1_400, "limit": 500})
    assert len(last["read_errors"]) == 100 and last["next"] is None
    assert api.json("/api/v1/nodes/nope/read-errors", status=404) == {"error": "no node 'nope'"}
