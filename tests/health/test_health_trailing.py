"""The congestion window of the engine's fast path: the same count as Windows, and bounds that hold it."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fabricweb.health.view import PortView
from fabricweb.health.window import Windows, bounds, trailing
from tests.health.test_health_properties import numbers

WAIT = "port_xmit_wait"
NOW = 1_772_323_200.0
counts = st.one_of(st.integers(0, 10**12), numbers)
moved = st.dictionaries(st.sampled_from([WAIT, "symbol_error"]), counts, max_size=2)
steps = st.one_of(st.floats(1e-3, 400.0), st.sampled_from([10.0, 0.5, 60.0]), numbers)


@st.composite
def rings(draw):
    """Polls in ascending order of float ts, the last at NOW (this poll, as ingest appends it)."""
    gaps = draw(st.lists(st.one_of(st.floats(1e-6, 700.0), st.sampled_from([10.0, 10.000001])), max_size=40))
    ts, out = NOW, [[NOW, draw(steps), draw(moved)]]
    for gap in gaps:
        ts -= gap
        out.append([ts, draw(steps), draw(moved)])
    return out[::-1]


def _windows(ring, interval, deltas, length) -> tuple[float, float]:
    view = PortView("cn001", "mlx5_0", 1, ts=NOW, interval_s=interval, deltas=deltas, recent=ring)
    c = Windows(view, (length,), (WAIT,)).count(WAIT, length)
    return c.total, c.span_s


lengths = st.sampled_from([300.0, 60.0, 3600.0, 25.0])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rings(), numbers, moved, lengths)
def test_it_counts_the_window_as_windows_does(ring, interval, deltas, length):
    c = trailing(NOW, interval, deltas, ring, WAIT, length)
    assert (c.total, c.span_s) == _windows(ring, interval, deltas, length)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rings(), st.floats(0.0, 400.0), moved, lengths)
def test_its_bounds_hold_the_count_when_it_gives_them(ring, interval, deltas, length):
    b = bounds(NOW, interval, deltas, ring, WAIT, length)
    assume(b is not None)
    total, span = _windows(ring, interval, deltas, length)
    assert total <= b[0]
    assert span >= b[1]


def test_it_bounds_a_regular_ring_close_to_its_count():
    ring = [[NOW - 10.0 * k, 10.0, {WAIT: 1000}] for k in range(60, -1, -1)]
    total, span = _windows(ring, 10.0, {WAIT: 1000}, 300.0)
    assert (total, span) == (30_000.0, 300.0)
    high, low = bounds(NOW, 10.0, {WAIT: 1000}, ring, WAIT, 300.0)
    assert total <= high < total * 1.001
    assert 0.9 * span < low <= span


def test_it_gives_no_bounds_for_an_unknown_count_or_a_poll_reaching_back_past_the_window():
    ring = [[NOW - 10.0 * k, 10.0, {WAIT: 1000}] for k in range(60, -1, -1)]
    assert bounds(NOW, 10.0, {WAIT: None}, ring, WAIT, 300.0) is None
    unknown = [*ring[:-3], [ring[-3][0], 10.0, {WAIT: None}], *ring[-2:]]
    assert bounds(NOW, 10.0, {}, unknown, WAIT, 300.0) is None
    long = [*ring[:-3], [ring[-3][0], 400.0, {WAIT: 5}], *ring[-2:]]
    assert bounds(NOW, 10.0, {}, long, WAIT, 300.0) is None
    assert trailing(NOW, 10.0, {}, long, WAIT, 300.0) == Windows(
        dataclasses.replace(PortView("a", "b", 1), ts=NOW, interval_s=10.0, recent=long), (300.0,), (WAIT,)
    ).count(WAIT, 300.0)
