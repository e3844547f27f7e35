"""The `recent` ring: clean polls merged, the window kept, and readable by the health rules' windows."""

from __future__ import annotations

from fabricweb.health.view import PortView
from fabricweb.health.window import Windows
from fabricweb.telemetry.ring import WINDOW_S, kept_deltas, push

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
