"""Covers fabricweb/telemetry/validation/quickwire.py, fabricweb/telemetry/validation/quickparse.py,
fabricweb/telemetry/intake/messages.py (snapshots_of, from_wire), fabricweb/telemetry/ingest.py.

The wire form's quick path accepts only what the long way (from_wire, then parse_snapshot's worded checks)
accepts, with the same values and types; what it doubts, the long way decides and words."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors import wire
from fabricweb.telemetry.ingest import ingest_batch
from fabricweb.telemetry.intake.messages import Dropped, from_wire
from fabricweb.telemetry.validation.checks import MAX_COUNTER, all_counters
from fabricweb.telemetry.validation.quickwire import parse_wire
from fabricweb.telemetry.validation.schema import SnapshotIn, SnapshotRejected, parse_worded
from tests.telemetry.telemetry_support import BASES, NOW, dgx_polls, mutated, mutations


def on_the_wire(snap: dict, encoder: wire.Encoder | None = None) -> dict:
    """`snap` as an agent sends it, through JSON."""
    return json.loads(json.dumps((encoder or wire.Encoder("fabricweb (tests)")).encode(snap)))


def long_way(data):
    """What ingest makes of a wire snapshot without the quick path: the typed snapshot, or why not."""
    try:
        return parse_worded(from_wire(copy.deepcopy(data)), NOW)
    except (Dropped, SnapshotRejected) as e:
        return e


def second_poll(snap: dict) -> dict:
    """`snap`'s second poll as an agent sends it: its devices' attributes and ports' hw_counters as last sent."""
    encoder = wire.Encoder("fabricweb (tests)")
    encoder.encode(snap)
    return on_the_wire(snap, encoder)


# First polls, then second ones.
WIRES = [on_the_wire(base) for base in BASES] + [second_poll(base) for base in BASES]


def test_it_types_a_wire_snapshot_as_the_long_way_does():
    for data in WIRES:
        expected = long_way(data)  # (the worded checks learn the counter names)
        assert isinstance(expected, SnapshotIn)
        quick = parse_wire(copy.deepcopy(data), NOW)
        assert quick is not None
        assert repr(quick) == repr(expected)  # the same values, types and key order


def test_it_types_a_dgx_nodes_polls_with_devices_as_last_sent(tmp_path):
    encoder = wire.Encoder("fabricweb (tests)")
    first, second = (on_the_wire(snap, encoder) for snap in dgx_polls(tmp_path, 2))
    assert all(d.get("same") for d in second["devices"]) and second["gpus_same"] is True
    for data in (first, second):
        expected = long_way(data)
        quick = parse_wire(data, NOW)
        assert quick is not None and repr(quick) == repr(expected)
    assert len(quick.devices) == 8 and all(d.same for d in quick.devices) and quick.gpus_same


def test_hw_counters_as_last_sent_are_typed_as_such_and_a_contradiction_goes_the_long_way():
    data = second_poll(BASES[0])  # (typed alike both ways: test_it_types_a_wire_snapshot_as_the_long_way_does)
    assert all("hw_counters" not in p for d in data["devices"] for p in d["ports"])
    quick = parse_wire(copy.deepcopy(data), NOW)
    assert all(p.hw_counters is wire.AS_LAST_SENT for d in quick.devices for p in d.ports)
    data["devices"][0]["ports"][0]["absent"] = {"hw_counters": [0]}  # none sent, and some absent: contradicts
    assert parse_wire(copy.deepcopy(data), NOW) is None
    assert "its hw_counters as last sent (none given) and absent ones both" in str(long_way(data))


def test_a_port_lacking_counters_its_node_names_is_typed_without_them():
    snap = copy.deepcopy(BASES[0])
    port = snap["devices"][1]["ports"][0]
    name = next(iter(port["counters"]))
    del port["counters"][name]
    data = on_the_wire(snap)
    assert data["devices"][1]["ports"][0]["absent"]["counters"]
    expected = long_way(data)
    quick = parse_wire(data, NOW)
    assert quick is not None and repr(quick) == repr(expected)
    assert name not in quick.devices[1].ports[0].counters


@pytest.mark.parametrize("absent", [{"counters": [999]}, {"counters": None}, {"counters": ["0"]}, ["counters"]])
def test_a_malformed_list_of_absent_counters_goes_the_long_way_which_words_it(absent):
    data = copy.deepcopy(WIRES[0])
    data["devices"][1]["ports"][0]["absent"] = absent
    assert parse_wire(data, NOW) is None
    assert isinstance(long_way(data), Dropped)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("wire",), 4),
        (("names", "counters"), ["symbol_error_x"]),  # a name the worded checks have not passed
        (("names", "counters"), ["symbol_error", "symbol_error"]),
        (("names", "counters"), "symbol_error_x," + WIRES[0]["names"]["counters"].split(",", 1)[1]),  # (joined)
        (("devices", 1, "ports", 0, "counters", 0), -1),
        (("devices", 1, "ports", 0, "counters", 0), 1.0),
        (("devices", 1, "ports", 0, "counters", 0), True),
        (("devices", 1, "ports", 0, "link"), [None] * 12),
        (("devices", 1, "ports", 0, "link", 4), 70000),  # the lid
        (("devices", 1, "same"), 1),
        (("gpus_same",), 1),
    ],
)
def test_it_leaves_every_doubt_to_the_long_way(path, value):
    data = copy.deepcopy(WIRES[0])
    long_way(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert parse_wire(data, NOW) is None


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("names", "counters"), "symbol_error,symbol_error", "names.counters: a name given twice"),
        (("names", "counters"), "x" * 200_000, "names.counters: more than 131072 characters"),
        (("devices", 1, "ports", 0, "link", 0), 9, "link[0]: a state given by its id alone (9)"),
        (("devices", 1, "ports", 0, "link", 1), 99, "link[1]: a state given by its id alone (99)"),
        (("devices", 1, "ports", 0, "link", 3), ["HDR", 3], "link[3]: a rate as [speed, lanes]"),
        (("devices", 1, "ports", 0, "link", 3), ["ZDR", 4], "link[3]: a rate as [speed, lanes]"),
        (("devices", 1, "ports", 0, "link", 3), ["HDR", True], "link[3]: a rate as [speed, lanes]"),
        (("devices", 1, "ports", 0, "link", 3), [["HDR"], 4], "link[3]: a rate as [speed, lanes]"),
        (("devices", 1, "ports", 0, "link", 3), ["HDR"], "link[3]: a rate as [speed, lanes]"),
    ],
)
def test_a_short_link_or_joined_names_it_cannot_read_goes_the_long_way_which_words_it(path, value, reason):
    data = copy.deepcopy(WIRES[0])
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert parse_wire(copy.deepcopy(data), NOW) is None
    refused = long_way(data)
    assert isinstance(refused, Dropped | SnapshotRejected) and reason in str(refused)


def test_a_set_no_port_has_is_typed_as_none_both_ways_and_absent_ones_beside_it_are_refused():
    snap = copy.deepcopy(BASES[0])
    for device in snap["devices"]:
        for port in device["ports"]:
            port["counters_ext"] = {}
    data = on_the_wire(snap)
    assert data["names"]["counters_ext"] == "" and "counters_ext" not in data["devices"][0]["ports"][0]
    expected = long_way(data)
    quick = parse_wire(copy.deepcopy(data), NOW)
    assert quick is not None and repr(quick) == repr(expected) and quick.devices[0].ports[0].counters_ext == {}
    data["devices"][0]["ports"][0]["absent"] = {"counters_ext": [0]}
    assert parse_wire(copy.deepcopy(data), NOW) is None
    assert "no counters_ext sent (none named), and absent ones" in str(long_way(data))


def test_gpus_as_last_sent_beside_gpus_go_the_long_way_which_refuses_them():
    data = copy.deepcopy(WIRES[0])
    data["gpus"], data["gpus_same"] = [], True
    assert parse_wire(data, NOW) is None
    assert "gpus_same" in str(long_way(data))


def test_it_leaves_a_snapshot_dated_past_the_clocks_tolerance_to_the_long_way():
    data = copy.deepcopy(WIRES[0])
    data["collected_at"] = "2026-03-02T12:00:00Z"  # a day after NOW
    assert parse_wire(data, NOW) is None
    assert "ahead of this server's clock" in str(long_way(data))


def test_ingest_stores_a_typed_snapshot_as_it_stores_its_wire_form(each_db):
    typed = parse_wire(copy.deepcopy(WIRES[1]), NOW)
    assert type(typed) is SnapshotIn
    (stored,) = ingest_batch([typed]).results
    (again,) = ingest_batch([from_wire(copy.deepcopy(WIRES[1]))]).results
    assert (stored.status, stored.ports_ingested) == ("stored", sum(len(d.ports) for d in typed.devices))
    assert again.status == "duplicate"  # the same poll, read the long way


@pytest.mark.parametrize(
    ("values", "fit"),
    [
        ([], True),
        ([None, None], True),
        ([0, 5, MAX_COUNTER], True),
        ([None, 5], True),
        ([5, True], False),  # a bool is not a counter
        ([5, 1.0], False),
        ([-1, None], False),
        ([MAX_COUNTER + 1], False),
        ([5, "5"], False),
    ],
)
def test_a_list_of_values_is_counters_only_when_each_is_null_or_a_counter_in_range(values, fit):
    assert all_counters(values) is fit


# -- random wire snapshots: the same verdict and values both ways ---------------------------------


@given(base=st.sampled_from(WIRES), changes=mutations(WIRES))
def test_random_wire_snapshots_get_the_same_verdict_and_values_both_ways(base, changes):
    data = mutated(base, changes)
    expected = long_way(data)
    quick = parse_wire(copy.deepcopy(data), NOW)
    if quick is not None:  # accepted: the long way accepts it too, with the same values and types
        assert isinstance(expected, SnapshotIn), expected
        assert repr(quick) == repr(expected)
