"""Covers fabricweb/fabric/models.py, fabricweb/inventory/models.py, fabricweb/api/views/switches.py,
fabricweb/api/views/ports.py, fabricweb/api/views/nodes.py.

/api/v1/switches, /api/v1/links, /api/v1/topology-changes and the ports' far ends, on SQLite and PostgreSQL:
a simulated fabric (hosts and their switches) stored through the real host and fabric ingest."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.fabric.models import FabricNode, Link, TopologyChange
from fabricweb.inventory.models import Node
from tests.fabric.fabric_support import polled_worlds

EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)">'
QDR12 = {"gbps": 120.0, "lanes": 12, "speed": "QDR", "name": "12X QDR", "bytes_per_second": 15e9}


@pytest.fixture
def world(each_db, tmp_path):
    return polled_worlds(tmp_path)


def test_the_fabric_endpoints_need_credentials(world, anonymous):
    world(polls=1)
    for path in ("/api/v1/switches", "/api/v1/switches/leaf01", "/api/v1/links", "/api/v1/topology-changes"):
        assert anonymous.get(path).status_code == 401, path


def test_switches_are_listed_with_guid_description_and_port_counts(world, api):
    w = world(start_faults=("leaf01/5:speed=DDR",))
    body = api.json("/api/v1/switches")
    assert [s["name"] for s in body["switches"]] == ["leaf01", "leaf02", "spine01"] and body["next"] is None
    leaf = body["switches"][0]
    node = Node.objects.get(name="leaf01")
    assert leaf == {
        "name": "leaf01",
        "url": "/api/v1/switches/leaf01",
        "guid": node.guid,
        "description": "MF0;leaf01:MQM8790-HS2F/U1",
        "lid": w.builder.by_name["leaf01"].ports[0].lid,  # a switch's LID is its port 0's
        "system_guid": node.guid,
        "vendor_id": 0x2C9,
        "device_id": 0xD2F0,
        "num_ports": 12,
        "reachable": True,
        "missing_since": None,
        "first_seen_at": "2026-03-01T00:00:10Z",
        "last_ingested_at": "2026-03-01T00:00:20Z",
        # By status, each port once: a port never cabled is not connected, not down.
        "ports": {
            "total": 12,
            "down": 0,
            "no_subnet_manager": 0,
            "degraded": 1,
            "vanished": 0,
            "unknown": 0,
            "up": 10,
            "not_connected": 1,
        },
        "open_events": {"critical": 0, "warning": 0, "info": 0},  # the host end speaks for its degraded link
    }
    page = api.json("/api/v1/switches", {"limit": 2})
    assert len(page["switches"]) == 2 and page["next"] == "/api/v1/switches?limit=2&offset=2"


def test_a_switch_the_sweeps_no_longer_reach_is_not_reachable(world, api):
    w = world()
    w.builder.mute("leaf02")
    w.poll()
    leaf02 = api.json("/api/v1/switches/leaf02")
    assert leaf02["reachable"] is False and leaf02["missing_since"] == "2026-03-01T00:00:30Z"
    assert leaf02["open_events"]["critical"] == 1


def test_a_switch_is_found_by_name_or_by_guid_with_its_ports_far_ends(world, api):
    world()
    guid = Node.objects.get(name="leaf01").guid
    by_name = api.json("/api/v1/switches/leaf01")
    assert api.json(f"/api/v1/switches/{guid}") == by_name == api.json(f"/api/v1/switches/0x{guid[2:].upper()}")
    ports = by_name["port_list"]
    assert [p["port"] for p in ports] == list(range(1, 13))
    assert ports[0]["label"] == "leaf01 port 1" and ports[0]["far_end"]["url"] == "/api/v1/ports/cn001/mlx5_0/1"
    assert ports[6]["far_end"]["switch_url"] == "/api/v1/switches/spine01"
    assert api.json("/api/v1/switches/nosuch", status=404) == {"error": "no switch 'nosuch'"}
    api.json("/api/v1/switches/cn001", status=404)  # a host is not a switch


def test_the_links_api_names_both_ends_of_a_degraded_link(world, api):
    world(start_faults=("leaf01/7:speed=DDR",))
    body = api.json("/api/v1/links", {"degraded": "true"})
    (link,) = body["links"]
    spine = Node.objects.get(name="spine01").guid
    assert link["a"] == {
        "guid": Node.objects.get(name="leaf01").guid,
        "port": 7,
        "label": "leaf01 port 7",
        "node": "leaf01",
        "device": "switch",
        "url": "/api/v1/ports/leaf01/switch/7",
        "switch_url": "/api/v1/switches/leaf01",
    }
    assert (link["b"]["guid"], link["b"]["label"], link["b"]["url"]) == (
        spine,
        "spine01 port 1",
        "/api/v1/ports/spine01/switch/1",
    )
    assert link["link"]["name"] == "12X DDR" and link["capable"] == QDR12
    assert (link["inter_switch"], link["state"], link["up"], link["degraded"]) == (True, "degraded", True, True)
    assert (link["first_seen_at"], link["gone_at"]) == ("2026-03-01T00:00:10Z", None)


def test_links_filter_by_kind_and_state_and_a_pulled_cable_is_down(world, api):
    w = world()
    w.builder.down("leaf02", 12)
    w.poll()
    assert len(api.json("/api/v1/links")["links"]) == 22
    isl = api.json("/api/v1/links", {"inter_switch": "true"})["links"]
    assert len(isl) == 12 and all(link["a"]["device"] == link["b"]["device"] == "switch" for link in isl)
    hosts = api.json("/api/v1/links", {"inter_switch": "false"})["links"]
    assert len(hosts) == 10 and {link["a"]["label"] for link in hosts} >= {"cn001 mlx5_0/1", "cn005 mlx5_1/1"}
    (down,) = api.json("/api/v1/links", {"state": "down"})["links"]
    assert (down["a"]["label"], down["b"]["label"]) == ("leaf02 port 12", "spine01 port 12")
    assert (down["up"], down["degraded"], down["gone_at"]) == (False, False, "2026-03-01T00:00:30Z")
    assert len(api.json("/api/v1/links", {"degraded": "false"})["links"]) == 22
    mine = api.json("/api/v1/links", {"node": "cn001"})["links"]
    assert [(link["a"]["label"], link["b"]["label"]) for link in mine] == [
        ("cn001 mlx5_0/1", "leaf01 port 1"),
        ("cn001 mlx5_1/1", "leaf01 port 2"),
    ]
    page = api.json("/api/v1/links", {"limit": 20})
    assert len(page["links"]) == 20 and page["next"] == "/api/v1/links?limit=20&offset=20"
    assert len(api.json(page["next"])["links"]) == 2


def test_links_to_a_mute_switch_are_unknown_not_down(world, api):
    w = world()
    w.builder.mute("leaf02")
    w.poll()
    unknown = api.json("/api/v1/links", {"state": "unknown", "inter_switch": "true"})["links"]
    assert len(unknown) == 6 and all(link["a"]["node"] == "leaf02" for link in unknown)
    assert all(link["up"] is None and link["degraded"] is None for link in unknown)


def test_the_ports_api_gives_each_port_its_far_end_what_both_ends_support_and_who_speaks_for_the_link(world, api):
    world()
    host = api.json("/api/v1/ports/cn001/mlx5_0/1")
    assert host["far_end"] == {
        "label": "leaf01 port 1",
        "node": "leaf01",
        "device": "switch",
        "port": 1,
        "url": "/api/v1/ports/leaf01/switch/1",
        "switch_url": "/api/v1/switches/leaf01",
    }
    assert (host["capable"], host["link_owner"], host["label"]) == (QDR12, True, "cn001 mlx5_0/1")
    switch = api.json("/api/v1/ports/leaf01/switch/1")
    assert switch["far_end"]["url"] == "/api/v1/ports/cn001/mlx5_0/1" and switch["far_end"]["switch_url"] is None
    assert (switch["link_owner"], switch["label"], switch["hca_type"]) == (False, "leaf01 port 1", None)
    listed = {p["label"]: p for p in api.json("/api/v1/ports", {"node": "cn006"})["ports"]}
    # cn006's ports are RoCE: no cable in the fabric, so no far end; the rest of the shape is as before.
    assert all(p["far_end"] is None and p["capable"] is None for p in listed.values())
    assert api.json("/api/v1/ports", {"node": "leaf01", "limit": 1})["ports"][0]["far_end"]["label"] == "cn001 mlx5_0/1"


def test_topology_changes_page_newest_first_with_a_cursor_and_since(world, api):
    w = world()
    w.builder.down("leaf01", 8)
    w.poll()
    w.builder.mute("leaf02")
    w.poll()
    body = api.json("/api/v1/topology-changes")
    changes = body["topology_changes"]
    assert len(changes) == 7 and body["next"] is None
    assert changes[-1] == {
        "id": TopologyChange.objects.get(label="leaf01 port 8").pk,
        "at": "2026-03-01T00:00:30Z",
        "kind": "disappeared",
        "guid": Node.objects.get(name="leaf01").guid,
        "port": 8,
        "label": "leaf01 port 8",
        "peer_before": "spine01 port 2",
        "peer_after": None,
        "collector": "fabric-test",
    }
    assert {c["at"] for c in changes[:-1]} == {"2026-03-01T00:00:40Z"}
    first = api.json("/api/v1/topology-changes", {"limit": 4})
    rest = api.json(first["next"])
    assert [c["id"] for c in first["topology_changes"] + rest["topology_changes"]] == [c["id"] for c in changes]
    since = api.json("/api/v1/topology-changes", {"since": "2026-03-01T00:00:35Z"})["topology_changes"]
    assert len(since) == 6 and all(c["label"].startswith("leaf02 port ") for c in since)


def test_the_nodes_list_says_each_nodes_kind_and_filters_by_it(world, api):
    world(polls=1)
    kinds = {n["name"]: n["kind"] for n in api.json("/api/v1/nodes")["nodes"]}
    assert kinds["cn001"] == "host" and kinds["leaf01"] == "switch" and kinds["fabric-test"] == "collector"
    assert [n["name"] for n in api.json("/api/v1/nodes", {"kind": "switch"})["nodes"]] == [
        "leaf01",
        "leaf02",
        "spine01",
    ]
    assert api.json("/api/v1/nodes", {"kind": "router"}, status=400)["error"].startswith("kind: expected one of host")


def test_the_fabric_endpoints_refuse_bad_parameters_with_a_message(world, api):
    world(polls=1)
    for path, query, words in (
        ("/api/v1/links", {"state": "sideways"}, "state: expected one of down, unknown, degraded, up, gone"),
        ("/api/v1/links", {"inter_switch": "maybe"}, "inter_switch: expected true or false"),
        ("/api/v1/links", {"nodes": "x"}, "nodes: unknown parameter"),
        ("/api/v1/switches", {"limit": "0"}, "limit: expected an integer from 1 to 5000"),
        ("/api/v1/topology-changes", {"since": "yesterday"}, "since: expected an ISO 8601 time"),
        ("/api/v1/topology-changes", {"cursor": "!!"}, "cursor: not a cursor this API gave out"),
    ):
        assert api.json(path, query, status=400)["error"].startswith(words), (path, query)


def test_a_switch_description_with_markup_is_served_as_data(world, api):
    w = world()
    w.builder.nodes["leaf01"].description = EVIL
    w.poll()
    assert FabricNode.objects.get(node__name="leaf01").description == EVIL
    response = api.get("/api/v1/switches/leaf01")
    assert b"<script>" not in response.content and b"\\u003cscript\\u003e" in response.content
    assert response.json()["description"] == EVIL


def test_fabric_endpoint_query_counts_do_not_grow_with_the_fabric(world, api):
    paths = (
        "/api/v1/switches",
        "/api/v1/switches/leaf01",
        "/api/v1/links",
        "/api/v1/links?inter_switch=true&degraded=false",
        "/api/v1/topology-changes",
        "/api/v1/ports?node=leaf01",
        "/api/v1/nodes/cn001",
    )

    def counts() -> dict[str, int]:
        out = {}
        for path in paths:
            api.get(path)
            with CaptureQueriesContext(connection) as seen:
                assert api.get(path).status_code == 200, path
            out[path] = len(seen)
        return out

    small = world(nodes=4)
    small.builder.down("leaf01", 8)
    small.poll()
    before = counts()
    for model in (Node, FabricNode, Link, TopologyChange):
        model.objects.all().delete()
    big = world(nodes=16)  # 4 leaves and 2 spines
    big.builder.down("leaf01", 8)
    big.builder.mute("leaf03")
    big.poll()
    assert counts() == before
    assert max(before.values()) <= 6, before
