"""Covers fabricweb/health/rules/findings.py, fabricweb/health/rules/, fabricweb/health/rules/view.py,
fabricweb/thresholds.py.

Error counters, flapping, congestion and capped counters."""

from __future__ import annotations

import pytest

from fabricweb.health.rules import judge_port
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.health.rules.view import PortView
from fabricweb.thresholds import Thresholds
from tests.health.health_factory import EDR, HDR, NOW, history, kinds, messages, port_view


def only(judgement, kind):
    found = [f for f in judgement.findings if f.kind == kind]
    assert len(found) == 1, judgement.findings
    return found[0]


def spread(counter: str, total: int, polls: int = 359) -> tuple:
    """`total` events of `counter`, one per poll, spread evenly over the last hour's earlier polls,
    the last of them in the newest (so a bouncing link is still bouncing)."""
    step = max(polls // max(total, 1), 1)
    marked = {polls - 1 - k * step for k in range(total)}
    return history(*({counter: 1} if i in marked else {} for i in range(polls)))


# --- symbol errors --------------------------------------------------------------------


def test_it_flags_symbol_errors_over_120_per_hour():
    j = judge_port(port_view(recent=spread("symbol_error", 121)))
    f = only(j, Kind.SYMBOL_ERRORS)
    assert f.message == (
        "cn042 mlx5_0/1: 121 symbol errors in the last hour (over 120 in an hour: bit error rate worse than 1e-12); "
        "check or reseat the cable"
    )
    assert f.severity is Severity.WARNING
    assert f.key == "symbol_errors:cn042/mlx5_0/1"


def test_120_symbol_errors_in_an_hour_is_still_within_spec():
    assert judge_port(port_view(recent=spread("symbol_error", 120))).findings == []


def test_symbol_errors_older_than_an_hour_do_not_count():
    old = ((NOW - 3700, 10.0, {"symbol_error": 500}),)
    assert judge_port(port_view(recent=old)).findings == []


def test_it_flags_more_than_10_symbol_errors_in_one_poll_as_fast_degradation():
    j = judge_port(port_view(deltas={"symbol_error": 11}))
    assert messages(j) == [
        "cn042 mlx5_0/1: 11 symbol errors in 10 s (over 10 per poll): the link is degrading fast; "
        "check or reseat the cable"
    ]


def test_ten_symbol_errors_in_one_poll_is_not_fast():
    assert judge_port(port_view(deltas={"symbol_error": 10})).findings == []


def test_a_long_poll_after_a_gap_is_not_called_fast():
    # 30 symbol errors over 20 minutes: slow, and under 120/h.
    assert judge_port(port_view(interval_s=1200.0, deltas={"symbol_error": 30})).findings == []


def test_a_poll_longer_than_an_hour_is_scaled_down_not_counted_whole():
    # 200 symbol errors in one 2-hour poll are 100/h.
    assert judge_port(port_view(interval_s=7200.0, deltas={"symbol_error": 200})).findings == []
    assert kinds(judge_port(port_view(interval_s=7200.0, deltas={"symbol_error": 300}))) == {"symbol_errors"}


def test_symbol_errors_with_link_retrains_are_critical():
    recent = (*spread("symbol_error", 200), (NOW - 5, 10.0, {"link_error_recovery": 1}))
    f = only(judge_port(port_view(recent=recent)), Kind.SYMBOL_ERRORS)
    assert f.severity is Severity.CRITICAL
    assert f.message == (
        "cn042 mlx5_0/1: 200 symbol errors in the last hour (over 120 in an hour: bit error rate worse than 1e-12); "
        "the link also retrained or went down once in the last hour: it is failing, replace the cable"
    )


def test_this_poll_passed_again_in_recent_is_not_counted_twice():
    view = port_view(deltas={"symbol_error": 70}, recent=((NOW, 10.0, {"symbol_error": 70}),))
    f = only(judge_port(view), Kind.SYMBOL_ERRORS)  # 70 > 10 per poll
    assert f.details["symbol_errors_per_hour"] == 70


# --- flapping -------------------------------------------------------------------------


def test_it_flags_a_flapping_link_from_link_downs():
    j = judge_port(port_view(recent=spread("link_downed", 3)))
    f = only(j, Kind.FLAPPING)
    assert (
        f.message == "cn042 mlx5_0/1: link flapping: 3 link downs in the last hour (link_downed); "
        "check the cable and the switch port"
    )
    assert f.severity is Severity.CRITICAL
    assert f.key == "flapping:cn042/mlx5_0/1"


def test_a_link_quiet_for_fifteen_minutes_has_stopped_flapping():
    downs = history(*({"link_downed": 1} if i in (0, 5, 10) else {} for i in range(100)))  # ~16 min ago
    assert "flapping" not in kinds(judge_port(port_view(recent=downs)))
    assert "flapping" in kinds(judge_port(port_view(recent=downs), Thresholds(flapping_quiet_s=1200)))


def test_a_link_that_flapped_and_stays_down_is_down_once_it_stopped_bouncing():
    downs = history(*({"link_downed": 1} if i in (0, 5, 10) else {} for i in range(100)))
    bouncing = history(*({"link_downed": 1} if i in (0, 5, 99) else {} for i in range(100)))
    down = dict(state_id=1, state_name="DOWN", phys_state_id=2, phys_state_name="Polling")
    assert kinds(judge_port(port_view(recent=bouncing, **down))) == {"flapping"}
    assert kinds(judge_port(port_view(recent=downs, **down))) == {"down"}


def test_a_second_link_down_within_the_hour_is_flapping():
    f = only(judge_port(port_view(recent=spread("link_downed", 2))), Kind.FLAPPING)
    assert f.severity is Severity.CRITICAL
    assert (
        f.message == "cn042 mlx5_0/1: link flapping: 2 link downs in the last hour (link_downed); "
        "check the cable and the switch port"
    )


def test_a_flapping_link_that_is_down_now_says_so_in_the_flapping_finding_not_a_new_down():
    view = port_view(state_id=1, phys_state_id=2, deltas={"link_downed": 1}, recent=history({"link_downed": 1}, {}, {}))
    j = judge_port(view)
    assert messages(j) == [
        "cn042 mlx5_0/1: link flapping, down now (DOWN, physical state Polling): "
        "2 link downs in the last hour (link_downed); check the cable and the switch port"
    ]
    # An open DOWN event is held, not counted clean, while the port is down inside the flapping episode.
    assert "down:cn042/mlx5_0/1" in j.unknown


def test_a_port_that_went_down_once_and_stays_down_is_down_not_flapping():
    view = port_view(state_id=1, phys_state_id=2, recent=history({"link_downed": 1}, {}, {}, {}))
    assert kinds(judge_port(view)) == {"down"}


def test_one_link_down_is_never_counted_as_a_hair_more_than_one():
    # A poll's times as ingest stored them in an end-to-end run: (age + interval) - age came out
    # 1.0000000000000002 intervals, so one bounce was "over 1 link downs/h" and paged as flapping.
    now = 1796151443.52933
    recent = ([1796151441.566242, 2.768597, {}], [1796151442.528108, 0.961866, {"link_downed": 1}], [now, 1.001222, {}])
    f = only(judge_port(port_view(ts=now, interval_s=1.001222, recent=recent)), Kind.FLAPPING)
    assert f.severity is Severity.INFO
    assert f.message == "cn042 mlx5_0/1: link went down and came back once in the last hour (link_downed)"
    assert f.details["link_downs_per_hour"] == 1


def test_more_than_5_link_error_recoveries_a_minute_is_critical_flapping():
    recent = history({"link_error_recovery": 1}, {"link_error_recovery": 2}, {"link_error_recovery": 1})
    j = judge_port(port_view(deltas={"link_error_recovery": 2}, recent=recent))
    f = only(j, Kind.FLAPPING)
    assert f.message == (
        "cn042 mlx5_0/1: link flapping: 6 link error recoveries in the last hour (link_error_recovery), "
        "6 in the last minute (over 5/min); check the cable and the switch port"
    )
    assert f.severity is Severity.CRITICAL


def test_link_error_recoveries_over_10_an_hour_are_a_warning():
    f = only(judge_port(port_view(recent=spread("link_error_recovery", 11))), Kind.FLAPPING)
    assert f.severity is Severity.WARNING
    assert f.message == (
        "cn042 mlx5_0/1: link flapping: 11 link error recoveries in the last hour (link_error_recovery); "
        "check the cable and the switch port"
    )


def test_a_few_link_error_recoveries_are_not_flapping():
    assert judge_port(port_view(recent=spread("link_error_recovery", 10))).findings == []


def test_one_bounce_between_polls_is_recorded_not_paged():
    j = judge_port(port_view(deltas={"link_downed": 1}))
    f = only(j, Kind.FLAPPING)
    assert f.severity is Severity.INFO
    assert f.message == "cn042 mlx5_0/1: link went down and came back once in the last hour (link_downed)"


def test_a_port_that_is_down_now_is_reported_down_not_bounced():
    j = judge_port(port_view(state_id=1, phys_state_id=2, deltas={"link_downed": 1}))
    assert kinds(j) == {"down"}


def test_a_flapping_link_keeps_one_key_poll_after_poll():
    keys = set()
    for k in range(10):
        recent = spread("link_downed", 3 + k)
        keys |= {f.key for f in judge_port(port_view(recent=recent)).findings}
    assert keys == {"flapping:cn042/mlx5_0/1"}


# --- other error counters -------------------------------------------------------------


@pytest.mark.parametrize(
    ("counter", "n", "kind", "severity", "text"),
    [
        (
            "port_rcv_errors",
            11,
            Kind.RCV_ERRORS,
            Severity.WARNING,
            "11 receive errors in the last hour (port_rcv_errors, over 10 in an hour): "
            "malformed packets arrive on this link; check the cable",
        ),
        (
            "port_rcv_remote_physical_errors",
            11,
            Kind.REMOTE_PHYSICAL_ERRORS,
            Severity.INFO,
            "11 remote physical errors in the last hour (port_rcv_remote_physical_errors, over 10 in an hour): "
            "packets arrive already marked bad: the fault is upstream, elsewhere in the fabric",
        ),
        (
            "port_xmit_discards",
            101,
            Kind.XMIT_DISCARDS,
            Severity.WARNING,
            "101 transmit discards in the last hour (port_xmit_discards, over 100 in an hour): "
            "packets dropped on send: congestion, or a peer that stopped taking data",
        ),
        (
            "local_link_integrity_errors",
            1,
            Kind.LINK_INTEGRITY,
            Severity.CRITICAL,
            "1 link integrity errors in the last hour (local_link_integrity_errors, any increase is serious): "
            "the link's physical errors went over the port's limit; check or replace the cable",
        ),
        (
            "excessive_buffer_overrun_errors",
            1,
            Kind.BUFFER_OVERRUN,
            Severity.CRITICAL,
            "1 buffer overrun errors in the last hour (excessive_buffer_overrun_errors, any increase is serious): "
            "the peer overran this port's receive buffers: flow control on this link is broken",
        ),
    ],
)
def test_it_flags_error_counters_over_their_threshold(counter, n, kind, severity, text):
    f = only(judge_port(port_view(recent=spread(counter, n))), kind)
    assert f.message == f"cn042 mlx5_0/1: {text}"
    assert f.severity is severity
    assert judge_port(port_view(recent=spread(counter, n - 1))).findings == []


def test_discards_while_the_link_went_down_are_explained_by_the_down():
    recent = (*spread("port_xmit_discards", 300), (NOW - 5, 10.0, {"link_downed": 1}))
    assert Kind.XMIT_DISCARDS not in kinds(judge_port(port_view(recent=recent)))


# --- congestion -----------------------------------------------------------------------


QUANTUM_2, SWITCH_IB_2 = 0xD2F2, 0xCF08


def counts(share: float, bytes_per_count: int = 8, link=EDR, seconds: float = 10.0) -> int:
    """port_xmit_wait counts that lose `share` of `seconds` on `link`, at `bytes_per_count` of the port's time."""
    return round(share * link.bytes_per_second * seconds / bytes_per_count)


def waiting(n: int, **changes) -> PortView:
    """Five minutes of 10 s polls, each counting `n` waits."""
    return port_view(deltas={"port_xmit_wait": n}, recent=history(*[{"port_xmit_wait": n}] * 29), **changes)


def test_it_flags_congestion_as_the_share_of_link_time_lost():
    # Quantum-2 counts 8 bytes of port time: 4X EDR is 12.5e9 B/s, so 40% of 10 s is 6.25e8 counts a poll.
    f = only(judge_port(waiting(counts(0.4), device_id=QUANTUM_2)), Kind.CONGESTION)
    assert f.message == (
        "cn042 mlx5_0/1: congested: 40% of the link's time lost waiting for credits in the last 5 min "
        "(port_xmit_wait at 8 bytes per count on Quantum-2, over 5%)"
    )
    assert f.severity is Severity.WARNING
    assert f.details["lost_share"] == 0.4 and not f.details["unit_assumed"]


def test_light_waiting_is_not_congestion():
    assert judge_port(waiting(counts(0.04), device_id=QUANTUM_2)).findings == []


def test_the_same_counts_are_sixteen_times_the_share_on_a_switch_ib_2():
    # Switch-IB 2 counts 32 bytes of each lane's time: on 4 lanes a count is 128 bytes, not 8.
    n = counts(0.025)
    assert judge_port(waiting(n, device_id=QUANTUM_2)).findings == []
    f = only(judge_port(waiting(n, device_id=SWITCH_IB_2)), Kind.CONGESTION)
    assert "40% of the link's time lost" in f.message and "32 bytes per lane per count on Switch-IB 2" in f.message


def test_the_same_counts_are_twice_the_share_on_a_link_half_as_fast():
    n = counts(0.04, link=HDR)  # 4% of 4X HDR, 8% of 4X EDR
    assert judge_port(waiting(n, device_id=QUANTUM_2, link=HDR)).findings == []
    assert "8% of the link's time lost" in only(judge_port(waiting(n, device_id=QUANTUM_2)), Kind.CONGESTION).message


def test_a_device_not_in_the_table_is_counted_at_the_default_and_says_assumed():
    f = only(judge_port(waiting(counts(0.4))), Kind.CONGESTION)  # the factory's ConnectX-4 (MT4119): no row
    assert f.message.endswith("(port_xmit_wait at 8 bytes per count, assumed, over 5%)")
    assert f.details["unit_assumed"]


def test_more_than_the_whole_link_is_said_not_capped():
    f = only(judge_port(waiting(counts(1.6))), Kind.CONGESTION)
    assert "160% of the link's time lost" in f.message
    assert f.message.endswith("more than the link's whole time: this device's bytes per count are not these")


def test_a_port_without_a_link_has_no_share_to_judge():
    assert Kind.CONGESTION not in kinds(judge_port(waiting(counts(0.4), link=None)))


def test_the_threshold_is_a_setting():
    assert judge_port(waiting(counts(0.4)), Thresholds(congestion_share=0.5)).findings == []


# --- capped and unknown counters ------------------------------------------------------


def test_capped_counters_are_info_with_the_fix():
    j = judge_port(port_view(capped=frozenset({"symbol_error", "port_xmit_data"}), deltas={"symbol_error": None}))
    f = only(j, Kind.CAPPED)
    assert f.message == (
        "cn042 mlx5_0/1: counters stuck at their maximum (port_xmit_data, symbol_error): their rates are unknown; "
        "reset the counter (perfquery -R) or use extended counters (64-bit PMA)"
    )
    assert f.severity is Severity.INFO
    assert [f.kind for f in j.findings] == [Kind.CAPPED]


def test_an_unknown_delta_holds_that_counters_events_instead_of_clearing_them():
    j = judge_port(port_view(deltas={"symbol_error": None}))
    assert "symbol_errors:cn042/mlx5_0/1" in j.unknown
    assert "rcv_errors:cn042/mlx5_0/1" not in j.unknown


def test_a_negative_delta_is_a_reset_not_negative_errors():
    assert judge_port(port_view(deltas={"symbol_error": -65535})).findings == []
