"""Covers collectors/mads/netfile.py, fabricweb/fabric/schema.py, fabricweb/fabric/switchports.py (errors_by_node).

Bad fabric snapshots get a clear error naming what was wrong, and nothing is stored.

A good snapshot here is one the collector's own to_dict makes (of a builder's sweep); each case breaks one thing.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from collectors.mads import netfile
from fabricweb.fabric import schema
from fabricweb.fabric.schema import SnapshotRejected, parse_fabric
from fabricweb.fabric.switchports import errors_by_node
from tests.fabric.fabric_support import SweepBuilder

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
NET = """
switchguid=0xb8599f0300000001
Switch 4 "leaf01" # "MF0;leaf01:MQM8790-HS2F/U1"
[1] "cn001 mlx5_0"[1] w=8 s=4
[4] "spine01"[1] w=8 s=4

switchguid=0xb8599f0300000002
Switch 4 "spine01" # "MF0;spine01:MQM8790-HS2F/U1"
[1] "leaf01"[4] w=8 s=4

caguid=0x0c42a10300000010
Hca 1 "cn001 mlx5_0" # "cn001 mlx5_0"
[1] "leaf01"[1] w=8 s=4
"""


def good() -> dict:
    return SweepBuilder(netfile.parse(NET), "fabric-a").snapshot(NOW)


def test_a_good_snapshot_reads_whole():
    fabric = parse_fabric(good(), NOW)
    assert fabric.collector == "fabric-a" and fabric.mode == "full"
    assert [n.description for n in fabric.nodes] == [
        "MF0;leaf01:MQM8790-HS2F/U1", "MF0;spine01:MQM8790-HS2F/U1", "cn001 mlx5_0",
    ]  # fmt: skip
    up = [p for p in fabric.ports if p.peer_node is not None]
    assert len(up) == 4 and all((p.lanes, p.speed) == (12, "QDR") for p in up)
    assert len(fabric.counters) == 8  # every switch port, counted whether up or down


def broken(change) -> dict:
    snap = copy.deepcopy(good())
    change(snap)
    return snap


def _set(path: tuple, value):
    def change(snap):
        target = snap
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: s.clear(), "kind None: not a fabric snapshot"),
        (_set(("schema",), 9), "unknown fabric schema version 9 (this server reads 1)"),
        (_set(("collector",), "fab/../x"), "collector 'fab/../x' is not a name"),
        (_set(("mode",), "partial"), "mode 'partial': expected one of full, counters"),
        (_set(("collected_at",), "yesterday"), "collected_at"),
        (
            _set(("nodes", "rows", 0, 0), "0xZZ"),
            "nodes row 0, guid: expected a GUID such as 0x0c42a10300a1b2c1, got '0xZZ'",
        ),
        (_set(("nodes", "rows", 1, 0), "0xb8599f0300000001"), "nodes row 1: GUID 0xb8599f0300000001 appears twice"),
        (_set(("nodes", "rows", 0, 3), "x" * 300), "nodes row 0, description: expected text of at most 256 characters"),
        (_set(("nodes", "rows", 0, 3), "leaf\x0001"), "nodes row 0, description"),
        (_set(("nodes", "rows", 0), [1, 2]), "nodes row 0: expected a list of 8 values or more"),
        (_set(("ports", "rows", 3, 0), 99), "ports row 3, node: expected an index into nodes (0 to 2), got 99"),
        (_set(("ports", "rows", 3, 6), 3), "ports row 3, lanes: expected null or one of (1, 2, 4, 8, 12), got 3"),
        (_set(("ports", "rows", 3, 7), "QDR4"), "ports row 3, speed: expected null or one of SDR"),
        (_set(("ports", "rows", 3, 12), 1), "ports row 3, peer_port: expected a port number with peer_node"),
        (_set(("ports", "columns"), ["node", "port"]), "ports.columns: port_guid, lid, state"),
        (_set(("ports", "rows"), "truncated"), "ports.rows: expected a list of rows"),
        (_set(("counters", "rows", 0), [0, 1, 5]), "counters row 0: expected 27 values, as the columns state"),
        (_set(("counters", "rows", 0, 2), -1), "counters row 0, symbol_error: expected null or a counter"),
        (_set(("counters", "rows", 0, 2), 2**70), "counters row 0, symbol_error: expected null or a counter"),
        (_set(("counters", "rows", 0, 2), True), "counters row 0, symbol_error: expected null or a counter"),
        (_set(("counters", "rows", 0, 3), 1.0), "counters row 0, link_error_recovery: expected null or a counter"),
        (_set(("counters", "columns", 0), "switch"), "counters.columns: the first two must be node and port"),
        (_set(("widths",), [1, 4, 3]), "widths: 3 is not one this server knows"),
        (_set(("errors",), [{"path": "x"}]), "errors[0].reason: expected text of at most 512 characters, got None"),
    ],
)
def test_a_broken_snapshot_is_refused_naming_what_is_wrong(change, reason):
    with pytest.raises(SnapshotRejected) as e:
        parse_fabric(broken(change), NOW)
    assert reason in e.value.reason


def test_a_sweeps_nodes_as_the_last_sweeps_read_the_same_and_a_changed_one_reads_afresh():
    first = parse_fabric(good(), NOW)
    again = parse_fabric(good(), NOW)  # (the rows as the last sweep's: its nodes, kept)
    assert again.nodes == first.nodes and again.nodes is not first.nodes
    renamed = parse_fabric(broken(_set(("nodes", "rows", 0, 3), "MF0;leaf01b")), NOW)
    assert [n.description for n in renamed.nodes] == ["MF0;leaf01b", "MF0;spine01:MQM8790-HS2F/U1", "cn001 mlx5_0"]
    snap = good()
    assert parse_fabric(snap, NOW).nodes == first.nodes  # (checked: not the renamed rows, kept now)
    snap["nodes"]["rows"][0][3] = "MF0;leaf01c"  # the same rows, edited in place, are not the kept ones
    assert parse_fabric(snap, NOW).nodes[0].description == "MF0;leaf01c"


@pytest.mark.parametrize(
    ("row", "value", "reason"),
    [
        (2, True, "nodes row 2, type: expected 1 (CA), 2 (switch) or 3 (router), got True"),
        (0, 2.0, "nodes row 0, type: expected 1 (CA), 2 (switch) or 3 (router), got 2.0"),
    ],
)
def test_a_node_row_equal_to_the_last_sweeps_only_as_a_number_is_still_refused(row, value, reason):
    parse_fabric(good(), NOW)
    with pytest.raises(SnapshotRejected) as e:  # (True == 1 and 2.0 == 2: the rows compare equal)
        parse_fabric(broken(_set(("nodes", "rows", row, 1), value)), NOW)
    assert reason in e.value.reason


def test_a_snapshot_past_the_caps_is_refused_before_it_is_walked(monkeypatch):
    monkeypatch.setattr(schema, "MAX_PORTS", 10)
    with pytest.raises(SnapshotRejected, match="ports: 11 rows, more than the 10 of any real fabric"):
        parse_fabric(good(), NOW)


def test_a_counter_the_server_does_not_know_is_read_past_and_masks_in_another_order_are_reordered():
    snap = good()
    snap["counters"]["columns"].append("port_future_counter")
    for row in snap["counters"]["rows"]:
        row.append(5)
    snap["widths"] = [12, 8, 4, 2, 1]  # the masks below are now bits in this order
    for row in snap["ports"]["rows"]:
        row[8] = 1 if row[8] == 16 else row[8]  # 12X enabled: bit 0 in the stated order
    fabric = parse_fabric(snap, NOW)
    enabled = {p.width_enabled for p in fabric.ports if p.peer_node is not None}
    assert enabled == {16}  # 12X, bit 4 in this server's order
    assert len(next(iter(fabric.counters.values()))) == 25


def test_a_row_of_counters_keeps_each_value_and_the_unread_ones_null():
    snap = good()
    rows = snap["counters"]["rows"]
    rows[0][2:] = [None] * (len(rows[0]) - 2)  # nothing read
    rows[1][4] = None  # one counter unread
    fabric = parse_fabric(snap, NOW)
    first, second = (fabric.counters[tuple(r[:2])] for r in rows[:2])
    assert first == [None] * len(first)
    assert second == rows[1][2:] and second[2] is None and second[0] is not None


def test_an_error_names_the_collector():
    with pytest.raises(SnapshotRejected) as e:
        parse_fabric(broken(_set(("mode",), "x")), NOW)
    assert str(e.value).startswith("snapshot from fabric collector fabric-a rejected: mode 'x'")


def test_each_error_of_a_sweep_goes_to_each_node_whose_label_or_guid_begins_its_path():
    snap = good()
    snap["nodes"]["rows"][2][3] = "MF0;leaf01:MQM8790-HS2F/U1 (0xb8599f0300000001) hca"  # a CA's text holding a label
    paths = [
        "MF0;leaf01:MQM8790-HS2F/U1 (0xb8599f0300000001) port 3",
        "0xb8599f0300000002",  # a node's GUID alone: a node with no description
        "MF0;leaf01:MQM8790-HS2F/U1 (0xb8599f0300000001) hca (0x0c42a10300000010) port 1",  # both labels begin it
        "directed route 0,1,4",
        "spine01 (0xb8599f0300000002) port 1",  # not its label: its description is MF0;spine01:...
    ]
    snap["errors"] = [{"path": path, "reason": "no answer (timeout) after 3 tries"} for path in paths]
    fabric = parse_fabric(snap, NOW)
    by_node = errors_by_node(fabric)
    assert {i: [e["path"] for e in errors] for i, errors in by_node.items()} == {
        0: [paths[0], paths[2]],
        1: [paths[1]],
        2: [paths[2]],
    }
    for i, n in enumerate(fabric.nodes):  # the rule, node by node
        labelled = [e for e in fabric.errors if e["path"].startswith((f"{n.description} ({n.guid})", n.guid))]
        assert by_node.get(i, []) == labelled
