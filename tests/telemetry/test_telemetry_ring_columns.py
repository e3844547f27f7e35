"""Covers fabricweb/inventory/ringcolumns.py, fabricweb/telemetry/storage/ring.py (pushing onto columns) and the
ring's place in fabricweb/inventory/readings.py's history.

A ring in time order is held as three arrays and the deltas of the entries that are more than a wait; it
reads as the list of its entries, pushing onto it keeps the list rules, and a checkpoint writes it as columns
and reads it back the same."""

from __future__ import annotations

import sys

import orjson
import pytest

from fabricweb.inventory import readings
from fabricweb.inventory.models import Port
from fabricweb.inventory.ringcolumns import OTHER, Ring
from fabricweb.telemetry.storage.ring import push

NOW = 1_796_637_600.0
WAIT = "port_xmit_wait"


def busy_hour() -> tuple[Ring, float]:
    """An hour of 10 s polls of a port that waits at every poll, with a symbol error and an unknown wait."""
    ring, ts = [], NOW
    for k in range(360):
        ts += 10.0
        deltas = {WAIT: 5 + k % 7}
        if k == 340:
            deltas = {WAIT: 3, "symbol_error": 2}
        elif k == 350:
            deltas = {WAIT: None}
        ring = push(ring, ts, 10.0, deltas)
    return ring, ts


def test_a_busy_ports_hour_is_held_as_columns_in_a_tenth_of_the_memory_of_its_entries():
    ring, _ = busy_hour()
    assert type(ring) is Ring
    assert len(ring) == 110  # 50 merged minutes and the last 10 minutes' 60 polls
    assert ring.waits.count(OTHER) == 2
    assert ring.others == {NOW + 3410.0: {WAIT: 3, "symbol_error": 2}, NOW + 3510.0: {WAIT: None}}
    held = sum(sys.getsizeof(column) for column in (ring.times, ring.intervals, ring.waits))
    assert held < 3_300  # 24 B an entry, with the arrays' headers and room to grow
    entries = list(ring)  # the same as lists of two floats and a dict each: ~35 kB
    as_lists = sys.getsizeof(entries) + sum(
        sys.getsizeof(e) + 2 * sys.getsizeof(e[0]) + sys.getsizeof(e[2]) for e in entries
    )
    assert as_lists > 10 * held


def test_it_reads_as_the_list_of_its_entries():
    ring, ts = busy_hour()
    assert ring[-1] == [ts, 10.0, {WAIT: 5 + 359 % 7}]
    assert ring[-20] == [ts - 190.0, 10.0, {WAIT: 3, "symbol_error": 2}]
    assert ring[-10] == [ts - 90.0, 10.0, {WAIT: None}]
    assert ring[-1:] == [[ts, 10.0, {WAIT: 5 + 359 % 7}]]
    assert ring[0][1] == 60.0 and ring[0][0] == ts - 3600.0 + 60.0  # the oldest merged minute still inside
    assert [ts - 10.0, 10.0, {WAIT: 5 + 358 % 7}] in ring
    assert ring == list(ring) and ring == Ring.of(list(ring))
    assert repr(ring).startswith("Ring([[") and bool(ring) and not Ring()


def test_pushing_leaves_the_ring_given_as_it_was():
    ring, ts = busy_hour()
    before = list(ring)
    later = push(ring, ts + 10.0, 10.0, {"link_downed": 1})
    assert list(ring) == before
    assert later[-1] == [ts + 10.0, 10.0, {"link_downed": 1}]
    assert len(later) == len(before) + 1  # the poll that turned 10 minutes old started a minute of its own


def test_a_ring_it_cannot_hold_as_columns_stays_a_list():
    assert Ring.of([[NOW, 10, {}]]) is None  # an interval that is not a float
    assert Ring.of([[NOW, 10.0, {}], [NOW, 10.0, {}]]) is None  # two entries of one time
    assert Ring.of([(NOW, 10.0, {})]) is None
    ring = push([[NOW, 10, {WAIT: 4}]], NOW + 10.0, 10.0, {WAIT: 4})
    assert type(ring) is list and ring == [[NOW, 10, {WAIT: 4}], [NOW + 10.0, 10.0, {WAIT: 4}]]


def test_after_the_clock_steps_back_the_ring_is_held_as_columns_again_once_in_order():
    ring, ts = busy_hour()
    stepped = push(ring, ts - 5.0, -5.0, {WAIT: None, "symbol_error": None})
    assert type(stepped) is Ring  # sorted again, every time still distinct
    assert [e[0] for e in stepped] == sorted(e[0] for e in stepped)
    assert stepped[-2] == [ts - 5.0, -5.0, {WAIT: None, "symbol_error": None}]


def test_a_checkpoint_writes_the_ring_as_columns_and_reads_it_back_the_same():
    ring, ts = busy_hour()
    port = Port(pk=7, number=1)
    port.recent, port.state_polls, port.state_id, port.phys_state_id = ring, 12, 4, 5
    history = readings.encode_history([port], ts)
    recent = orjson.loads(history)["ports"][0][2]
    assert set(recent) == {"t", "i", "w", "x"}
    assert recent["x"] == [[NOW + 3410.0, {WAIT: 3, "symbol_error": 2}], [NOW + 3510.0, {WAIT: None}]]
    assert len(history) < 2_500 < 4_500 < len(orjson.dumps(list(ring)))  # as entries
    counters = readings.encode_counters([port])
    back = readings.decode(counters, history)[7][5]
    assert type(back) is Ring and back == ring and back.waits == ring.waits and back.others == ring.others


def test_columns_that_do_not_make_a_ring_are_refused_with_why():
    with pytest.raises(ValueError, match="differ in length"):
        Ring.from_columns({"t": [NOW, NOW + 10.0], "i": [10.0], "w": [0, 0], "x": []})
    with pytest.raises(ValueError, match="other deltas are not one an entry whose wait says so"):
        Ring.from_columns({"t": [NOW], "i": [10.0], "w": [OTHER], "x": []})
    with pytest.raises(ValueError, match="other deltas are not one an entry whose wait says so"):
        Ring.from_columns({"t": [NOW], "i": [10.0], "w": [4], "x": [[NOW, {WAIT: None}]]})
    with pytest.raises(ValueError, match="not in ascending order"):
        Ring.from_columns({"t": [NOW + 10.0, NOW], "i": [10.0, 10.0], "w": [0, 0], "x": []})
    with pytest.raises(ValueError, match="not numbers in arrays"):
        Ring.from_columns({"t": ["yesterday"], "i": [10.0], "w": [0], "x": []})
    with pytest.raises(ValueError, match="not numbers in arrays"):
        Ring.from_columns({"t": [NOW], "i": [10.0], "w": [2**64], "x": []})
    with pytest.raises(ValueError, match="not numbers in arrays"):
        Ring.from_columns({"t": [NOW], "i": [10.0]})
