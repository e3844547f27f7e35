"""Covers fabricweb/health/rules/view.py, fabricweb/health/rules/window.py, fabricweb/telemetry/storage/ring.py,
fabricweb/inventory/ringcolumns.py.

The `recent` ring: clean polls merged, the window kept, and readable by the health rules' windows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fabricweb.health.rules.view import PortView
from fabricweb.health.rules.window import Windows
from fabricweb.inventory.ringcolumns import Ring
from fabricweb.telemetry.storage.ring import FINE_S, WINDOW_S, _coarsen, kept_deltas, push

NOW = 1_772_366_400.0


def polls(deltas_per_poll, start=NOW, step=10.0):
    ring, ts = [], start
    for deltas in deltas_per_poll:
        ts += step
        ring = push(ring, ts, step, deltas)
    return ring, ts


def test_clean_polls_merge_into_one_entry_and_the_last_poll_stays_apart():
    ring, ts = polls([{}] * 30)
    assert ring == [[ts - 10, 290.0, {}], [ts, 10.0, {}]]


def test_polls_with_errors_keep_their_own_entry():
    ring, ts = polls([{}] * 5 + [{"symbol_error": 3}] + [{}] * 5)
    assert ring == [
        [NOW + 50, 50.0, {}],
        [NOW + 60, 10.0, {"symbol_error": 3}],
        [ts - 10, 40.0, {}],
        [ts, 10.0, {}],
    ]
    assert sum(e[1] for e in ring) == ts - NOW  # every second observed is covered once


def test_entries_that_ended_before_the_window_are_dropped():
    ring, ts = polls([{"link_downed": 1}] + [{}] * 400)
    assert all(e[0] > ts - WINDOW_S for e in ring)
    assert not any(e[2] for e in ring)
    assert ring[0][1] <= WINDOW_S


def test_kept_deltas_keep_what_moved_and_what_is_unknown():
    deltas = {"symbol_error": 0, "link_downed": 2, "port_xmit_wait": None, "port_rcv_data": 10**9}
    assert kept_deltas(deltas) == {"link_downed": 2}  # traffic is not the ring's business
    assert kept_deltas(deltas, unknown=["port_xmit_wait"]) == {"link_downed": 2, "port_xmit_wait": None}


def test_the_health_windows_see_the_whole_hour_and_only_the_errors_in_it():
    # An hour of 10 s polls with congestion in one of them, then this poll, clean.
    ring, ts = polls([{}] * 200 + [{"port_xmit_wait": 5_000}] + [{}] * 159)
    view = PortView(node="cn001", device="mlx5_0", port=1, ts=ts, interval_s=10.0, deltas={}, recent=ring)
    hour = Windows(view, [3600.0]).count("port_xmit_wait", 3600.0)
    assert hour.total == 5_000
    assert abs(hour.span_s - 3600.0) < 1e-6  # a sparse ring would have said 20 s, and a share 180 x too big


# -- pushing at the ring's ends gives what going through the whole ring gave ------------------------


def whole_ring_push(ring, ts, interval, deltas, window=WINDOW_S):
    """The ring's rules applied to every entry at every poll, as push did before it kept to the ends."""
    out = [e for e in ring if e[0] > ts - window]
    if len(out) >= 2 and not out[-1][2] and not out[-2][2] and out[-1][1] > 0 and out[-2][1] > 0:
        out[-2:] = [[out[-1][0], min(out[-2][1] + out[-1][1], window), {}]]
    out.append([ts, interval, deltas])
    return _coarsen(out, ts - FINE_S)


POLL_DELTAS = [
    {},
    {},
    {"port_xmit_wait": 7},
    {"port_xmit_wait": 7},
    {"port_xmit_wait": 90},
    {"symbol_error": 1},
    {"port_xmit_wait": None},
    {"port_xmit_wait": 3, "link_downed": 1},
]
STEPS = [10.0, 10.0, 10.0, 5.0, 0.5, 30.0, 59.0, 61.0, 700.0, 4000.0]


def trace(rnd, length: int, clock_steps: bool = False):
    """(interval, deltas) of `length` polls, drawn evenly (hypothesis' own lists shrink towards clean polls)."""
    for _ in range(length):
        step = rnd.choice(STEPS)
        if clock_steps and rnd.random() < 0.05:
            step = -rnd.choice([20.0, 5000.0])
        yield step, dict(rnd.choice(POLL_DELTAS))


@given(st.randoms(use_true_random=False), st.integers(min_value=100, max_value=600))
def test_pushing_at_the_ends_matches_the_whole_ring_rules(rnd, length):
    ring = whole = []
    ts = NOW
    for interval, deltas in trace(rnd, length):
        ts += interval
        ring = push(ring, ts, interval, deltas)
        whole = whole_ring_push(whole, ts, interval, dict(deltas))
        assert ring == whole
    assert type(ring) is Ring  # pushed onto its columns (inventory/ringcolumns.py), the list rules kept


@given(st.randoms(use_true_random=False), st.integers(min_value=1, max_value=600))
def test_after_the_clock_steps_back_the_ring_stays_in_time_order_and_in_the_window(rnd, length):
    ring, ts = [], NOW
    for interval, deltas in trace(rnd, length, clock_steps=True):
        ts += interval
        ring = push(ring, ts, interval, deltas)
        stamps = [e[0] for e in ring]
        assert stamps == sorted(stamps)
        assert all(e[0] > ts - WINDOW_S for e in ring)
        assert [ts, interval, deltas] in ring
