"""Covers collectors/link.py, fabricweb/telemetry/storage/columns.py, fabricweb/telemetry/storage/packing.py.

Packing a node-poll's samples into bytes and back (fabricweb/telemetry/storage/packing.py): no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.link import SPEEDS
from fabricweb.telemetry.storage.columns import DELTA_COLUMNS
from fabricweb.telemetry.storage.packing import PackError, entries_of, pack, unpack

N = len(DELTA_COLUMNS)
IDLE = (10.0, 4, 5, "HDR", 4, False, False)

u64 = st.integers(min_value=0, max_value=2**64 - 1)
delta = st.one_of(st.none(), u64, st.integers(min_value=-(2**63), max_value=-1))
# Intervals as the node's clock gives them: whole microseconds, zero or negative after a clock step.
interval = st.one_of(st.none(), st.integers(min_value=-(10**12), max_value=10**12).map(lambda us: us / 1_000_000))
small = st.one_of(st.none(), st.integers(min_value=0, max_value=255))
head = st.tuples(
    interval,
    small,
    small,
    st.one_of(st.none(), st.sampled_from([s.name for s in SPEEDS])),
    small,
    st.booleans(),
    st.booleans(),
)
entry = st.tuples(st.integers(min_value=0, max_value=2**40), head, st.tuples(*[delta] * N))


@given(st.lists(entry, max_size=12))
def test_every_entry_comes_back_exactly_in_port_order(entries):
    data = pack(entries)
    assert unpack(data) == sorted(entries, key=lambda e: e[0])
    for port_id in {e[0] for e in entries}:
        assert entries_of(data, port_id) == [e for e in entries if e[0] == port_id]


@given(st.lists(entry, min_size=1, max_size=6), st.integers(min_value=0, max_value=2**40))
def test_a_port_not_in_the_row_has_no_entry(entries, port_id):
    wanted = [e for e in entries if e[0] == port_id]
    assert entries_of(pack(entries), port_id) == wanted


def test_unknown_stays_none_and_zero_stays_zero():
    deltas = (None, 0) * (N // 2) + (None,) * (N % 2)
    [(_, _, back)] = unpack(pack([(7, IDLE, deltas)]))
    assert back == deltas
    assert back[0] is None and back[1] == 0


def test_capped_reset_and_clock_steps_keep_their_flags_and_signs():
    rows = [
        (1, (0.0, 4, 5, "NDR", 4, True, False), (None,) * N),
        (2, (-3.5, 4, 5, "NDR", 4, False, True), (-5,) + (0,) * (N - 1)),
        (3, (None, None, None, None, None, False, False), (None,) * N),
        (4, (10.000123, 1, 2, "SDR", 1, True, True), (2**64 - 1,) * N),
    ]
    assert unpack(pack(rows)) == rows


def test_an_idle_port_costs_few_bytes():
    idle = (10.0, 4, 5, "HDR", 4, False, False)
    one = pack([(1000, idle, (0,) * N)])
    # version, port id (2), length, flags, interval (2), link (2), bitmap, 17 one-byte deltas
    assert len(one) == 1 + 2 + 1 + 1 + 2 + 2 + 1 + N
    # The next port of the same node costs its id step, not its id.
    assert len(pack([(1000, idle, (0,) * N), (1001, idle, (0,) * N)])) == len(one) + 2 + 1 + 2 + 2 + 1 + N


def test_link_values_beyond_the_narrow_form_round_trip():
    rows = [(5, (10.0, 200, 9, "XDR", 64, False, False), (1,) * N)]
    assert unpack(pack(rows)) == rows


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([(1, (10.0, 4, 5, "WDR", 4, False, False), (0,) * N)], "speed 'WDR' is not one of"),
        ([(1, IDLE, (0,) * (N - 1))], f"{N - 1} deltas, expected {N}"),
        ([(-1, IDLE, (0,) * N)], "port id -1 is negative"),
    ],
)
def test_a_value_that_cannot_be_packed_is_refused_with_the_reason(entries, message):
    with pytest.raises(PackError, match=message):
        pack(entries)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a packed row of version 1"),
        (b"\x02\x01\x00", "not a packed row of version 1"),
        (pack([(1, IDLE, (0,) * N)])[:-3], "runs past the end"),
        (pack([(1, IDLE, (300,) * N)])[:-1] + b"\x80", "entry ends at byte|truncated"),
    ],
)
def test_bytes_that_are_not_a_packed_row_are_refused_with_the_reason(data, message):
    with pytest.raises(PackError, match=message):
        unpack(data)
