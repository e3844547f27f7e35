"""Covers fabricweb/api/views/ports.py.

GET /api/v1/ports (filters, pages) and /api/v1/ports/<node>/<device>/<port>."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import (
    NODE_EXPORTER,
    T0,
    SimFabric,
    event,
    expect,
    port,
    snapshot,
    store_fixture_node,
    without_engine_events,
)


def names(body: dict) -> list[str]:
    return [f"{p['node']} {p['device']}/{p['port']}" for p in body["ports"]]


@pytest.fixture
def two_nodes(each_db):
    """cn001 from the procfs tree (mlx5_0/1 is 1X EDR, expected 4X EDR); cn002 from node_exporter's, one port down."""
    store_fixture_node("cn001")
    snap = snapshot(NODE_EXPORTER, host="cn002")
    i40 = next(d for d in snap["devices"] if d["name"] == "i40iw0")
    i40["ports"][0].update(state={"id": 1, "name": "DOWN"}, phys_state={"id": 3, "name": "Disabled"})
    ingest_snapshot(snap)
    # As a policy "mlx5 ports on cn* are 4X EDR" would: the health engine learns 1X EDR from this port alone.
    expect(port("cn001", "mlx5_0", 1), "EDR", 4, "policy 'cn-edr'")
    without_engine_events()


def test_ports_list_shows_state_link_and_expectation(each_db, api, two_nodes):
    body = api.json("/api/v1/ports")
    assert names(body) == [
        "cn001 hfi1_0/1",
        "cn001 mlx4_0/1",
        "cn001 mlx4_0/2",
        "cn001 mlx5_0/1",
        "cn002 i40iw0/1",
        "cn002 mlx4_0/1",
        "cn002 mlx4_0/2",
    ]
    slow = body["ports"][3]
    assert slow["state"] == {"id": 4, "name": "Active"}
    assert slow["link"] == {"gbps": 25.0, "lanes": 1, "speed": "EDR", "name": "1X EDR", "bytes_per_second": 3.125e9}
    assert slow["expected_link"]["name"] == "4X EDR" and slow["expected_link"]["gbps"] == 100.0
    assert slow["expected_source"] == "policy 'cn-edr'"
    assert slow["up"] is True and slow["degraded"] is True


def test_a_port_without_an_expectation_shows_null_not_a_guess(each_db, api, two_nodes):
    expect(port("cn001", "hfi1_0", 1), None, None, "")
    body = api.json("/api/v1/ports/cn001/hfi1_0/1")
    assert body["expected_link"] is None and body["expected_source"] is None and body["degraded"] is False


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"node": "cn002"}, ["cn002 i40iw0/1", "cn002 mlx4_0/1", "cn002 mlx4_0/2"]),
        ({"state": "not_connected"}, ["cn002 i40iw0/1"]),  # disabled at its first poll, no policy
        ({"state": "down"}, []),
        ({"degraded": "true"}, ["cn001 mlx5_0/1"]),
        ({"degraded": "true", "node": "cn002"}, []),
        ({"hca_type": "MT4118"}, ["cn001 mlx5_0/1"]),
        ({"state": "up", "node": "cn002", "hca_type": "MT4099"}, ["cn002 mlx4_0/1", "cn002 mlx4_0/2"]),
        ({"node": "cn404"}, []),
    ],
    ids=[
        "node",
        "not connected",
        "never up is not down",
        "degraded",
        "degraded on a healthy node",
        "hca_type",
        "combined",
        "unknown node",
    ],
)
def test_ports_filters(each_db, api, two_nodes, query, expected):
    assert names(api.json("/api/v1/ports", query)) == expected


def test_degraded_false_lists_the_rest(each_db, api, two_nodes):
    listed = names(api.json("/api/v1/ports", {"degraded": "false"}))
    assert "cn001 mlx5_0/1" not in listed and len(listed) == 6


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"state": "sideways"}, "state"),
        ({"state": "UP"}, "state"),
        ({"degraded": "maybe"}, "degraded"),
        ({"node": "x" * 65}, "node"),
        ({"limit": "-3"}, "limit"),
        ({"stat": "down"}, "stat"),
    ],
)
def test_bad_filter_values_are_400s_naming_the_parameter(each_db, api, query, parameter):
    error = api.json("/api/v1/ports", query, status=400)["error"]
    assert error.startswith(f"{parameter}: ")


def test_a_filter_given_twice_is_refused(each_db, api):
    assert api.json("/api/v1/ports?state=up&state=down", status=400) == {"error": "state: given more than once"}


def test_ports_are_paged(each_db, api, two_nodes):
    seen, path = [], "/api/v1/ports?limit=3"
    while path:
        body = api.json(path)
        seen += names(body)
        path = body["next"]
    assert len(seen) == len(set(seen)) == 7


def test_port_detail_has_link_expectation_counters_and_open_events(each_db, api, two_nodes):
    slow = port("cn001", "mlx5_0", 1)
    event(slow, "link_degraded", "critical", T0, message="trained at 25 Gb/s (1X EDR), expected 100 Gb/s (4X EDR)")
    event(slow, "symbol_errors", "warning", T0 - timedelta(hours=3), resolved=T0 - timedelta(hours=2))

    body = api.json("/api/v1/ports/cn001/mlx5_0/1")

    assert (body["node"], body["device"], body["port"], body["hca_type"]) == ("cn001", "mlx5_0", 1, "MT4118")
    assert body["phys_state"] == {"id": 4, "name": "PortConfigurationTraining"}
    assert body["link"]["name"] == "1X EDR" and body["expected_link"]["name"] == "4X EDR"
    assert body["expected_source"] == "policy 'cn-edr'" and body["degraded"] is True
    assert body["best_link"]["name"] == "1X EDR" and body["ever_up"] is True
    assert body["counters"]["port_xmit_data"] == 11523046035392  # bytes, as the node sent them
    assert body["counters"]["symbol_error"] == 3 and body["capped"] == []
    assert body["last_sample"]["symbol_error"] == 3 and body["last_sample"]["interval_s"] == 10.0
    assert [e["kind"] for e in body["open_events"]] == ["link_degraded"]
    assert body["open_events"][0]["message"].startswith("trained at 25 Gb/s")


def test_port_detail_reports_capped_counters_and_unknown_as_null(each_db, api, two_nodes):
    body = api.json("/api/v1/ports/cn002/mlx4_0/1")
    assert "port_xmit_wait" in body["capped"]
    na = api.json("/api/v1/ports/cn002/i40iw0/1")
    assert na["state"]["name"] == "Down" and na["phys_state"]["name"] == "Disabled" and na["up"] is False
    assert na["counters"]["symbol_error"] is None  # `N/A (no PMA)`: unknown, not 0
    assert na["last_sample"]["rcv_bytes"] is None


def test_port_detail_of_a_simulated_port_has_pcie_and_netdevs(each_db, api, tmp_path):
    fab = SimFabric(tmp_path, 1)
    fab.poll()
    body = api.json("/api/v1/ports/cn001/mlx5_0/1")
    assert body["netdevs"] == ["ib0"] and body["lid"] > 0
    assert body["pcie"]["name"] == "Gen4 x16" and body["pcie"]["max_name"] == "Gen4 x16"
    assert body["link"]["name"] == "4X HDR" and body["link"]["bytes_per_second"] == 25e9


def test_a_simulated_width_fault_shows_as_a_degraded_port(each_db, api, tmp_path):
    fab = SimFabric(tmp_path, 3)
    fab.poll()
    fab.fabric.add_fault("cn002/mlx4_0/1:width=1X", "cn003/mlx5_1/1:down")
    fab.poll()
    narrow = port("cn002", "mlx4_0", 1)
    assert (narrow.best_speed, narrow.best_lanes) == ("QDR", 4)
    # What the health engine would conclude from this port's history.
    expect(narrow, narrow.best_speed, narrow.best_lanes, "learned from this port's history")

    degraded = api.json("/api/v1/ports", {"degraded": "true"})["ports"]
    assert [(p["node"], p["device"], p["port"]) for p in degraded] == [("cn002", "mlx4_0", 1)]
    assert degraded[0]["link"]["name"] == "1X QDR" and degraded[0]["expected_link"]["name"] == "4X QDR"
    assert degraded[0]["expected_source"] == "learned from this port's history"
    down = api.json("/api/v1/ports", {"state": "down"})["ports"]
    assert [(p["node"], p["device"], p["state"]["name"]) for p in down] == [("cn003", "mlx5_1", "Down")]


def test_an_unknown_port_is_a_json_404(each_db, api, two_nodes):
    assert api.json("/api/v1/ports/cn001/mlx5_0/2", status=404) == {"error": "no port 2 on cn001 mlx5_0"}
    assert api.json("/api/v1/ports/cn001/mlx9_0/1", status=404)["error"]
