"""Covers fabricweb/telemetry/validation/quickparse.py, fabricweb/telemetry/validation/schema.py; through them
fabricweb/telemetry/validation/typed.py.

The quick path of parse_snapshot accepts only what the worded checks accept, and returns the same values."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricweb.telemetry.validation.quickparse import parse_common
from fabricweb.telemetry.validation.schema import SnapshotRejected, parse_snapshot, parse_worded
from tests.telemetry.telemetry_support import BASES, NOW, mutated, mutations, port_of


def worded(snap):
    try:
        return parse_worded(copy.deepcopy(snap), NOW)
    except SnapshotRejected as e:
        return e


def test_it_takes_a_valid_snapshot_with_the_values_the_worded_checks_return():
    for base in BASES:
        expected = worded(base)  # (it also learns the counter names)
        quick = parse_common(base, NOW)
        assert quick is not None
        # repr tells 16 from 16.0 and True, and dict key order: the same values of the same types
        assert repr(quick) == repr(expected)
        assert repr(parse_snapshot(base, NOW)) == repr(expected)


def test_it_keeps_data_counters_past_64_bits_as_integers():
    snap = copy.deepcopy(BASES[0])
    worded(snap)
    port = port_of(snap, "mlx4_0", 1)
    port["counters_ext"]["port_xmit_data_64"] = 4 * (2**64 - 1)
    port["counters"]["symbol_error"] = None
    parsed = parse_common(snap, NOW)
    assert parsed is not None
    got = next(p for d in parsed.devices if d.name == "mlx4_0" for p in d.ports if p.number == 1)
    assert got.counters_ext["port_xmit_data_64"] == 4 * (2**64 - 1)
    assert got.counters["symbol_error"] is None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("devices", 1, "ports", 0, "lid"), 16.0),
        (("devices", 1, "ports", 0, "lid"), True),
        (("devices", 1, "ports", 0, "counters", "symbol_error"), True),
        (("devices", 1, "ports", 0, "counters", "symbol_error"), 4 * (2**64 - 1) + 1),
        (("devices", 1, "ports", 0, "counters", "symbol_error"), 1.0),
        (("devices", 1, "ports", 0, "rate", "gbps"), float("nan")),
        (("devices", 1, "ports", 0, "link_layer"), "Infini\x00Band"),
        (("devices", 1, "fw_ver"), "2.\ud800"),
        (("devices", 1, "pci"), []),
        (("devices", 1, "ports", 0, "capped"), ["nope"]),
        (("errors",), [{"path": "p"}]),
        (("source",), "x"),
    ],
)
def test_it_leaves_every_fault_to_the_worded_checks(path, value):
    snap = copy.deepcopy(BASES[0])
    target = snap
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert parse_common(snap, NOW) is None
    assert isinstance(worded(snap), SnapshotRejected)


# -- random snapshots: the same accept/reject and the same values through both -------------


@given(base=st.sampled_from(BASES), changes=mutations(BASES))
def test_random_snapshots_get_the_same_verdict_and_values_both_ways(base, changes):
    snap = mutated(base, changes)
    quick = parse_common(copy.deepcopy(snap), NOW)
    expected = worded(snap)
    if quick is not None:  # accepted: the worded checks must accept it too, with the same values and types
        assert not isinstance(expected, SnapshotRejected), expected
        assert repr(quick) == repr(expected)
    if isinstance(expected, SnapshotRejected):  # and parse_snapshot gives the worded reason
        with pytest.raises(SnapshotRejected) as err:
            parse_snapshot(snap, NOW)
        assert err.value.reason == expected.reason
