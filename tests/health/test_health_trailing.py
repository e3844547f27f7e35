"""Covers fabricweb/health/rules/view.py, fabricweb/health/engine/waitlog.py, fabricweb/health/rules/window.py,
fabricweb/telemetry/storage/ring.py.

The congestion window of the engine's fast path: the same count as Windows, and bounds that hold it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricweb.health.engine.waitlog import WaitLog
from fabricweb.health.rules.view import PortView
from fabricweb.health.rules.window import Windows, trailing
from fabricweb.telemetry.storage.ring import kept_deltas, push
from tests.health.health_support import numbers

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


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(rings(), numbers, moved, lengths)
def test_it_counts_the_window_as_windows_does(ring, interval, deltas, length):
    c = trailing(NOW, interval, deltas, ring, WAIT, length)
    assert (c.total, c.span_s) == _windows(ring, interval, deltas, length)


# A port's polls as ingest pushes them onto its ring: (seconds since the last, its wait count, an error moved).
polls = st.lists(
    st.tuples(
        st.one_of(st.sampled_from([10.0, 10.000001, 9.999999]), st.floats(1e-4, 900.0)),
        st.one_of(st.sampled_from([0, 0, 1, 10**9]), st.integers(0, 10**12), st.none()),
        st.booleans(),
    ),
    min_size=1,
    max_size=120,
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(polls, st.integers(0, 120), lengths)
def test_its_bounds_hold_the_windows_count_as_ingest_grows_the_ring(steps, seed_at, length):
    ring, ts, log = [], NOW, None
    for k, (gap, wait, error) in enumerate(steps):
        ts += gap
        deltas = {WAIT: wait, "symbol_error": int(error)}
        ring = push(ring, ts, gap, kept_deltas(deltas, [WAIT] if wait is None else []))
        if log is not None:
            b = log.bounds(ts, gap, deltas, ring, length)
            if b is not None:
                c = trailing(ts, gap, deltas, ring, WAIT, length)
                assert c.total <= b[0]
                assert c.span_s >= b[1]
            log.add(ring[-1])
        elif k >= seed_at:
            log = WaitLog(ring)


def test_it_bounds_a_regular_ring_close_to_its_count():
    ring, ts = [], NOW
    for _ in range(61):
        ts += 10.0
        ring = push(ring, ts, 10.0, {WAIT: 1000})
    log = WaitLog(ring)
    ts += 10.0
    ring = push(ring, ts, 10.0, {WAIT: 1000})
    c = trailing(ts, 10.0, {WAIT: 1000}, ring, WAIT, 300.0)
    assert (c.total, c.span_s) == (30_000.0, 300.0)
    high, low = log.bounds(ts, 10.0, {WAIT: 1000}, ring, 300.0)
    assert c.total <= high < c.total * 1.001
    assert low > 40.0  # this poll and the four before: enough to say a port waiting 1% of the time is calm


def test_it_gives_no_bounds_for_an_unknown_count_or_a_ring_it_did_not_see_grow():
    ring, ts = [], NOW
    for _ in range(40):
        ts += 10.0
        ring = push(ring, ts, 10.0, {WAIT: 5})
    log = WaitLog(ring)
    later = push(ring, ts + 10.0, 10.0, {WAIT: 5})
    assert log.bounds(ts + 10.0, 10.0, {WAIT: None}, later, 300.0) is None
    elsewhere = push(later, ts + 20.0, 10.0, {WAIT: 5})  # a poll ingested by another process in between
    assert log.bounds(ts + 20.0, 10.0, {WAIT: 5}, elsewhere, 300.0) is None
    assert log.bounds(ts + 10.0, 10.0, {WAIT: 5}, later, 300.0) is not None


# Polls of odd lengths, each ending a little after the one before and all of them whole inside the hour.
whole_polls = st.lists(
    st.tuples(st.floats(1e-3, 30.0), st.floats(1e-3, 30.0), st.integers(0, 3)), min_size=1, max_size=40
)


@given(whole_polls, st.floats(1e-3, 30.0))
def test_it_counts_polls_whole_inside_the_window_exactly(steps, interval):
    ring, ts = [], NOW - 3000.0
    for gap, seconds, downs in steps:
        ts += gap
        ring.append([ts, seconds, {"link_downed": downs}])
    expected = sum(downs for *_, downs in steps)
    view = PortView("cn001", "mlx5_0", 1, ts=NOW, interval_s=interval, deltas={}, recent=ring)
    for length in (3600.0, 3300.0):  # all in the longest window; all in a shorter one
        assert Windows(view, (length,)).count("link_downed", length).total == expected
        assert trailing(NOW, interval, {}, ring, "link_downed", length).total == expected
