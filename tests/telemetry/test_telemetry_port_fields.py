"""Covers fabricweb/telemetry/validation/portfields.py, fabricweb/telemetry/validation/quickparse.py,
fabricweb/telemetry/validation/schema.py, fabricweb/telemetry/results.py, fabricweb/fabric/switchports.py; through
them fabricweb/telemetry/validation/typed.py and fabricweb/telemetry/validation/checks.py.

A port's fields are declared once, in portfields.PORT_FIELDS: PortIn has exactly its fields and LinkState its LINK
ones; both validators check every field as its row says (at its bounds they take it, past them both refuse it, the
worded checks naming where it is), and the fabric path fills every field it reads and leaves the others unknown."""

from __future__ import annotations

import copy
import dataclasses
import re
from datetime import UTC, datetime

import pytest

from fabricweb.fabric.switchports import _port_in
from fabricweb.telemetry.results import LinkState
from fabricweb.telemetry.validation.portfields import (
    COUNTERS,
    DISAGREEMENTS,
    GUID,
    INTEGER,
    LINK,
    NAMES,
    NUMBER,
    ONE_OF,
    PORT_FIELDS,
    SCALARS,
    TEXT,
)
from fabricweb.telemetry.validation.quickparse import parse_common
from fabricweb.telemetry.validation.schema import SnapshotRejected, parse_worded
from fabricweb.telemetry.validation.typed import PortIn
from tests.telemetry.telemetry_support import PROCFS, T0, snapshot

NOW = datetime(2026, 3, 1, 12, 5, tzinfo=UTC)
COUNTER = "symbol_error"


def _base() -> dict:
    """A valid snapshot of one device with one port that sends every field of the table."""
    snap = snapshot(PROCFS, host="cn004", at=T0)
    device = snap["devices"][0]
    device["ports"] = device["ports"][:1]
    snap["devices"] = [device]
    port = device["ports"][0]
    port.update(lid=7, sm_lid=1, lmc=0, cap_mask=0x2651E848, port_guid="0x0c42a10300a1b2c1", netdevs=["ib0"])
    port.update(counters={COUNTER: 3}, counters_ext={}, capped=[], hw_counters={}, verbs={"mtu": 4096})
    port["disagreements"] = [{"field": "lid", "sysfs": 7, "verbs": 7}]
    return snap


def _port(snap: dict) -> dict:
    return snap["devices"][0]["ports"][0]


def _with(f, value) -> dict:
    snap = _base()
    holder, key = _port(snap), f.wire
    if "." in key:
        outer, key = key.split(".")
        holder = holder[outer]
    holder[key] = value
    return snap


def _valid(f) -> list:
    if f.check == INTEGER:
        return list(f.bounds)
    if f.check == NUMBER:
        return [0, f.bounds[0]]
    if f.check == TEXT:
        return ["x" * f.bounds[0]]
    if f.check == ONE_OF:
        return list(f.bounds)
    return {
        GUID: ["0x0002c90300a1b2c1"],
        NAMES: [[COUNTER]],  # a name, and among the port's counters where it says which are capped
        COUNTERS: [{COUNTER: 0}],
        SCALARS: [{"state": "PORT_ACTIVE", "active_mtu": 5}],
        DISAGREEMENTS: [[{"field": "rate", "sysfs": 100.0, "verbs": None}]],
    }[f.check]


def _invalid(f) -> list:
    if f.check == INTEGER:
        low, high = f.bounds
        return [low - 1, high + 1, str(high), float(low), True]
    if f.check == NUMBER:
        return [-1, f.bounds[0] * 2, float("nan"), "1"]
    if f.check == TEXT:
        return ["x" * (f.bounds[0] + 1), 5, "a\x00b"]
    if f.check == ONE_OF:
        return [v for v in (0, 3, 100, 4.0, "nonsense", "") if v not in f.bounds]
    if f.check == NAMES:
        return [[COUNTER] * (f.bounds[0] + 1), COUNTER, [5]]
    return {
        GUID: ["0x0c42", "0X0C42A10300A1B2C1", 5],
        COUNTERS: [{COUNTER: -1}, {"not a name": 1}, [1]],
        SCALARS: [[1], {"a": [1]}],
        DISAGREEMENTS: ["rate", [{"field": 5}]],
    }[f.check]


def _worded(snap):
    try:
        return parse_worded(copy.deepcopy(snap), NOW)
    except SnapshotRejected as e:
        return e


def test_portin_and_linkstate_have_the_tables_fields_in_its_order():
    assert [f.name for f in dataclasses.fields(PortIn)] == [f.name for f in PORT_FIELDS]
    assert LinkState._fields == tuple(f.name for f in PORT_FIELDS if f.group == LINK)
    assert PortIn.__slots__ == tuple(f.name for f in PORT_FIELDS)  # slotted: no per-port dict


def test_both_validators_fill_every_field_from_the_snapshot_alike():
    snap = _base()
    worded = _worded(snap)
    quick = parse_common(snap, NOW)
    assert quick is not None and not isinstance(worded, SnapshotRejected)
    assert repr(quick) == repr(worded)
    port = quick.devices[0].ports[0]
    assert port.lid == 7 and port.port_guid == "0x0c42a10300a1b2c1" and port.netdevs == ["ib0"]
    assert LinkState.of(port) == ((4, "ACTIVE", 5, "LinkUp", "InfiniBand", 100.0, 4, "EDR"))


@pytest.mark.parametrize("f", PORT_FIELDS, ids=lambda f: f.name)
def test_both_validators_take_a_field_at_its_bounds(f):
    for value in _valid(f):
        snap = _with(f, value)
        worded = _worded(snap)
        assert not isinstance(worded, SnapshotRejected), (value, worded)
        quick = parse_common(snap, NOW)
        assert quick is not None, value
        assert repr(quick) == repr(worded)
        got = getattr(quick.devices[0].ports[0], f.name)
        assert got == value and type(got) is (float if f.check == NUMBER else type(value))


@pytest.mark.parametrize("f", PORT_FIELDS, ids=lambda f: f.name)
def test_both_validators_refuse_a_field_past_its_bounds_and_the_worded_ones_say_where(f):
    where = "device hfi1_0 ports[0]" if f.name == "number" else "device hfi1_0/1"
    values = _invalid(f) + ([None] if f.required else [])
    for value in values:
        snap = _with(f, value)
        assert parse_common(snap, NOW) is None, value
        worded = _worded(snap)
        assert isinstance(worded, SnapshotRejected), (value, worded)
        assert re.match(rf"{re.escape(where)}\.{re.escape(f.wire)}[:\[ ]", worded.reason), worded.reason


def test_the_fabric_path_fills_the_link_it_is_given_and_leaves_unknown_what_no_mad_reads():
    link = LinkState(4, "ACTIVE", 5, "LinkUp", "InfiniBand", 400.0, 4, "NDR")
    port = _port_in(9, link, None, "0x0c42a10300a1b2c1", 12)
    assert LinkState.of(port) == link
    assert (port.number, port.port_guid, port.lid) == (9, "0x0c42a10300a1b2c1", 12)
    unread = {f.name: getattr(port, f.name) for f in PORT_FIELDS if f.mad is None}
    assert unread and not any(unread.values()), unread
