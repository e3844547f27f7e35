"""Covers fabricweb/telemetry/storage/columns.py, fabricweb/telemetry/storage/deltas.py.

Counter arithmetic: resets, caps, gaps, values near 2^64, clocks going backwards."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricweb.telemetry.storage.columns import SOURCES
from fabricweb.telemetry.storage.deltas import (
    CAPPED,
    CLOCK,
    IMPLAUSIBLE,
    MAX_DELTA,
    MISSING,
    NO_BASELINE,
    PEAK_BYTES_PER_S,
    Delta,
    Reading,
    all_ones,
    counter_delta,
    plausible_max,
    port_deltas,
    rate,
)

U16 = (1 << 16) - 1
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1

CAP = Delta(None, capped=True, unknown=CAPPED)
F = False
# (why, counter, previous, current, interval, previously capped, capped now, expected)
CASES = [
    ("plain increase", "symbol_error", 10, 25, 10.0, F, F, Delta(15)),
    ("no change is a known zero", "symbol_error", 7, 7, 10.0, F, F, Delta(0)),
    ("data counters are already bytes", "port_xmit_data", 4_000, 4_400, 10.0, F, F, Delta(400)),
    ("a decrease is a reset: delta counts from zero", "symbol_error", 500, 3, 10.0, F, F, Delta(3, reset=True)),
    ("reset to exactly zero", "port_rcv_packets", 10**9, 0, 10.0, F, F, Delta(0, reset=True)),
    ("a missed poll: delta over the real interval", "port_rcv_packets", 100, 1_100, 30.0, F, F, Delta(1000)),
    ("16-bit counter stopped at all-ones now", "symbol_error", 65_000, U16, 10.0, F, F, CAP),
    ("capped flag from the snapshot", "port_xmit_wait", 5, 9, 10.0, F, True, CAP),
    ("was capped at the previous poll", "symbol_error", U16, U16, 10.0, True, True, CAP),
    ("reset after a cap: still unknown", "symbol_error", U16, 4, 10.0, True, F, Delta(None, True, True, CAPPED)),
    ("32-bit data counter at all-ones, in bytes", "port_xmit_data", 4 * (U32 - 10), 4 * U32, 10.0, F, F, CAP),
    ("8-bit counter one below all-ones is fine", "link_downed", 250, 254, 10.0, F, F, Delta(4)),
    ("64-bit counter just below 2^64", "unicast_xmit_packets", U64 - 1_000, U64 - 1, 10.0, F, F, Delta(999)),
    ("64-bit counter stopped at 2^64-1", "unicast_xmit_packets", U64 - 5, U64, 10.0, F, F, CAP),
    ("reset from near 2^64 is no giant delta", "port_xmit_data_64", 4 * (U64 - 10), 40, 10.0, F, F, Delta(40, True)),
    (
        "a jump no 64-bit column holds",
        "port_rcv_data_64",
        0,
        4 * (U64 - 1),
        10.0,
        F,
        F,
        Delta(None, unknown=IMPLAUSIBLE),
    ),
    (
        "more bytes than 12X XDR carries in 10 s",
        "port_rcv_data",
        0,
        4 * 10**12,
        10.0,
        F,
        F,
        Delta(None, unknown=IMPLAUSIBLE),
    ),
    ("12X XDR at full rate for 10 s is plausible", "port_rcv_data", 0, 3 * 10**12, 10.0, F, F, Delta(3 * 10**12)),
    (
        "a reset cannot count more than the interval allows",
        "symbol_error",
        10**15,
        10**14,
        10.0,
        F,
        F,
        Delta(None, reset=True, unknown=IMPLAUSIBLE),
    ),
    ("clock went backwards", "symbol_error", 10, 12, -5.0, F, F, Delta(None, unknown=CLOCK)),
    ("zero interval", "symbol_error", 10, 12, 0.0, F, F, Delta(None, unknown=CLOCK)),
    ("no reading now", "symbol_error", 10, None, 10.0, F, F, Delta(None, unknown=MISSING)),
    ("no reading before", "symbol_error", None, 10, 10.0, F, F, Delta(None, unknown=NO_BASELINE)),
    ("first poll, capped", "symbol_error", None, U16, None, F, F, Delta(None, capped=True, unknown=NO_BASELINE)),
]


@pytest.mark.parametrize(
    ("name", "prev", "cur", "interval", "prev_capped", "cur_capped", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_counter_delta_table(name, prev, cur, interval, prev_capped, cur_capped, expected):
    got = counter_delta(name, prev, cur, interval, prev_capped=prev_capped, cur_capped=cur_capped)
    assert got == expected


def test_it_records_a_reset_instead_of_a_negative_delta():
    got = counter_delta("port_rcv_errors", 1_000, 20, 10.0)
    assert got.value == 20
    assert got.reset


def test_all_ones_is_in_base_units():
    assert all_ones("symbol_error") == U16
    assert all_ones("port_xmit_data") == 4 * U32  # the PMA counts 4-octet words
    assert all_ones("port_xmit_data_64") == 4 * U64
    assert all_ones("unicast_rcv_packets") == U64


@pytest.mark.parametrize(
    ("delta", "interval", "expected"),
    [(100, 10.0, 10.0), (None, 10.0, None), (100, None, None), (100, 0.0, None), (100, -3.0, None)],
)
def test_rate_is_unknown_without_a_delta_or_a_positive_interval(delta, interval, expected):
    assert rate(delta, interval) == expected


def test_port_deltas_take_data_and_packets_from_counters_ext_when_both_exist():
    # The legacy 32-bit file has stopped; the 64-bit copy keeps counting.
    prev = Reading(
        {"port_xmit_data": 4 * U32, "symbol_error": 1}, {"port_xmit_data_64": 80_000, "port_xmit_packets_64": 10}
    )
    cur = Reading(
        {"port_xmit_data": 4 * U32, "symbol_error": 3},
        {"port_xmit_data_64": 120_000, "port_xmit_packets_64": 25},
        capped=["port_xmit_data"],
    )
    d = port_deltas(prev, cur, 10.0)
    assert d.values["xmit_bytes"] == 40_000
    assert d.values["xmit_packets"] == 15
    assert d.values["symbol_error"] == 2
    assert d.capped == []  # the capped 32-bit file is not the source


def test_port_deltas_never_mix_the_64_and_32_bit_copies():
    # counters_ext appears only now: the previous poll had the 32-bit value only.
    prev = Reading({"port_rcv_data": 1_000}, {})
    cur = Reading({"port_rcv_data": 1_400}, {"port_rcv_data_64": 9_999_999})
    assert port_deltas(prev, cur, 10.0).values["rcv_bytes"] == 400


def test_port_deltas_flag_resets_and_caps_per_column():
    prev = Reading({"symbol_error": 900, "port_xmit_wait": 5, "link_downed": 2}, {})
    cur = Reading({"symbol_error": 4, "port_xmit_wait": U32, "link_downed": 2}, {}, capped=["port_xmit_wait"])
    d = port_deltas(prev, cur, 10.0)
    assert d.values["symbol_error"] == 4
    assert d.values["xmit_wait"] is None
    assert d.values["link_downed"] == 0
    assert d.resets == ["symbol_error"]
    assert d.capped == ["xmit_wait"]


def test_port_deltas_without_a_previous_reading_are_all_unknown():
    d = port_deltas(None, Reading({"symbol_error": 4, "port_rcv_data": 8}, {}), None)
    assert set(d.values.values()) == {None}
    assert not d.clock_backwards


def test_port_deltas_say_when_the_clock_went_backwards():
    prev = Reading({"symbol_error": 1}, {})
    d = port_deltas(prev, Reading({"symbol_error": 2}, {}), -30.0)
    assert d.clock_backwards
    assert d.values["symbol_error"] is None


def test_a_counter_the_port_lacks_is_unknown_not_zero():
    prev = Reading({"symbol_error": 1}, {})
    d = port_deltas(prev, Reading({"symbol_error": 1}, {}), 10.0)
    assert d.values["symbol_error"] == 0
    assert d.values["port_rcv_switch_relay_errors"] is None


# -- the inline fast path of port_deltas agrees with counter_delta, the rules ----------------------

NAMES = sorted({name for sources in SOURCES.values() for _, name in sources})
SPECIAL = st.sampled_from([0, 1, U16 - 1, U16, U32 - 1, U32, 4 * U32, U64 - 1, U64, 4 * U64, 4 * (U64 - 1)])
VALUE = st.one_of(st.none(), st.integers(min_value=0, max_value=4 * U64), SPECIAL)
READING = st.builds(
    Reading,
    st.dictionaries(st.sampled_from(NAMES), VALUE, max_size=len(NAMES)),
    st.dictionaries(st.sampled_from(NAMES), VALUE, max_size=len(NAMES)),
    st.lists(st.sampled_from(NAMES), max_size=4),
)


def reference(prev: Reading | None, cur: Reading, interval):
    values, resets, capped = {}, [], []
    for column, sources in SOURCES.items():
        found = [
            (name, (prev.section(sec).get(name) if prev else None), cur.section(sec).get(name))
            for sec, name in sources
            if cur.section(sec).get(name) is not None
        ]
        both = [f for f in found if f[1] is not None]
        if not found:
            values[column] = None
            continue
        name, before, now = (both or found)[0]
        d = counter_delta(
            name,
            before,
            now,
            interval,
            prev_capped=prev is not None and name in prev.capped,
            cur_capped=name in cur.capped,
        )
        values[column] = d.value
        resets += [column] if d.reset else []
        capped += [column] if d.capped else []
    return values, resets, capped


@given(
    prev=st.one_of(st.none(), READING),
    cur=READING,
    interval=st.one_of(st.none(), st.floats(min_value=-100, max_value=1e5, allow_nan=False)),
)
def test_port_deltas_match_the_per_counter_rules(prev, cur, interval):
    got = port_deltas(prev, cur, interval)
    assert (got.values, got.resets, got.capped) == reference(prev, cur, interval)


# Every counter of a real port present in both readings: what the all-columns-at-once path takes.
PLAIN = sorted({sources[-1][1] for sources in SOURCES.values()})
EXT = sorted({name for sources in SOURCES.values() for sec, name in sources if sec == "counters_ext"})
NEAR = st.one_of(st.integers(min_value=0, max_value=1_000), SPECIAL, st.integers(min_value=0, max_value=4 * U64))


@st.composite
def full_readings(draw):
    with_ext = draw(st.booleans())
    names = PLAIN + (EXT if with_ext else [])
    before = {name: draw(st.one_of(NEAR, st.just(all_ones(name)))) for name in names}
    # Mostly counting up (else every example leaves the all-at-once path at its first reset).
    now = {
        name: draw(NEAR) if draw(st.integers(0, 30)) == 0 else before[name] + draw(st.sampled_from([0, 0, 1, 10**6]))
        for name in names
    }

    def split(values):
        return Reading({n: values[n] for n in PLAIN}, {n: values[n] for n in names if n in EXT})

    return split(before), split(now)


@given(pair=full_readings(), interval=st.one_of(st.none(), st.floats(min_value=-5, max_value=1e5, allow_nan=False)))
def test_port_deltas_of_complete_readings_match_the_per_counter_rules(pair, interval):
    prev, cur = pair
    got = port_deltas(prev, cur, interval)
    assert (got.values, got.resets, got.capped) == reference(prev, cur, interval)


def test_port_deltas_of_a_quiet_busy_port_are_exact():
    prev = Reading({n: 1_000 for n in PLAIN}, {n: 5_000 for n in EXT})
    cur = Reading({**{n: 1_000 for n in PLAIN}, "port_xmit_wait": 1_250}, {n: 9_000 for n in EXT})
    d = port_deltas(prev, cur, 10.0)
    assert d.deltas == [4_000] * 4 + [0] * 12 + [250]
    assert (d.resets, d.capped, d.clock_backwards) == ([], [], False)


def test_a_bound_summed_over_a_day_of_polls_stays_far_below_a_64_bit_column():
    # The worst a rollup bucket can hold: a day-long first interval plus the bucket, at 300 GB/s.
    assert PEAK_BYTES_PER_S == 300e9
    assert plausible_max(None) == plausible_max(10**9) == 300e9 * 86_400
    assert 12 * (plausible_max(None) + plausible_max(300.0)) < MAX_DELTA // 25


def test_port_deltas_refuse_an_implausible_jump_on_the_fast_path_too():
    prev = Reading({"port_xmit_data": 0, "symbol_error": 0}, {})
    cur = Reading({"port_xmit_data": MAX_DELTA, "symbol_error": 3}, {})
    d = port_deltas(prev, cur, 10.0)
    assert d.values["xmit_bytes"] is None
    assert d.values["symbol_error"] == 3
