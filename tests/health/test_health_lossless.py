"""Covers fabricweb/health/rules/lossless.py, fabricweb/health/engine/quiet.py and
fabricweb/health/records/critical.py: the lossless Ethernet rules on views: each threshold, the direction a pause
points at, and what each says in an Ethernet engineer's words."""

from __future__ import annotations

import pytest

from collectors import roce
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.findings import Kind
from fabricweb.health.rules.lossless import KIND_COUNTERS, judge_lossless, unknown_keys
from fabricweb.health.rules.view import PortView
from fabricweb.thresholds import DEFAULT, Thresholds

QUIET = dict.fromkeys(roce.WIRE_NAMES, 0)


def view(link_layer: str = "Ethernet", interval: float = 10.0, **moved: int) -> PortView:
    deltas = dict(QUIET)
    deltas.update({(roce.wire(k) if k in roce.ETHTOOL_NAMES else k): v for k, v in moved.items()})
    return PortView("cn006", "mlx5_0", 1, ts=1000.0, interval_s=interval, link_layer=link_layer, deltas=deltas)


def kinds(v: PortView, t: Thresholds = DEFAULT) -> dict[Kind, object]:
    return {f.kind: f for f in judge_lossless(v, t)}


def test_a_quiet_roce_port_and_an_infiniband_port_say_nothing():
    assert judge_lossless(view(), DEFAULT) == []
    assert unknown_keys(view()) == set()
    storm = {roce.STORM_ERROR: 5, roce.CNP_HANDLED: 10**7}
    assert judge_lossless(view("InfiniBand", **storm), DEFAULT) == []  # not a RoCE port: not these rules'
    assert unknown_keys(view("InfiniBand")) == set()


def test_received_pause_points_at_the_network_and_sent_pause_at_the_host():
    # 10 s poll: 2 s paused on priority 3 is 20%, over 10%; 0.9 s is 9%, under.
    found = kinds(view(rx_prio3_pause_duration=2_000_000, rx_prio3_pause=4000, tx_prio5_pause_duration=900_000))
    assert set(found) == {Kind.PAUSE_RECEIVED}
    assert found[Kind.PAUSE_RECEIVED].message == (
        "cn006 mlx5_0/1: received PFC pause on priority 3 for 20% of the last 10 s (rx_prio3_pause_duration, over "
        "10%; 4,000 pause frames): the switch is telling this port to stop sending: congestion in the network, at "
        "or beyond the switch port (look at its egress queue and where the traffic converges), not this host"
    )
    found = kinds(view(tx_prio3_pause_duration=5_000_000, tx_prio3_pause=15000))
    assert set(found) == {Kind.PAUSE_SENT}
    assert (
        "sent PFC pause on priority 3 for 50% of the last 10 s (tx_prio3_pause_duration"
        in found[Kind.PAUSE_SENT].message
    )
    assert found[Kind.PAUSE_SENT].message.endswith(
        "this port is telling the switch to stop: the host is not taking what arrives, so look at the host or its "
        "PCIe link (receive buffers, PCIe, host memory, a slow consumer), not the network"
    )
    assert kinds(view(tx_prio3_pause_duration=5_000_000), Thresholds(pfc_pause_share=0.6)) == {}


def test_a_pause_storm_is_critical_once_the_nic_stopped_pausing_and_says_the_sent_pause_and_drops_itself():
    found = kinds(
        view(tx_prio3_pause_duration=8_000_000, tx_pause_storm_warning_events=1, tx_pause_storm_error_events=1,
             rx_discards_phy=200_000)
    )  # fmt: skip
    assert set(found) == {Kind.PAUSE_STORM}  # not pause sent, not drops on arrival: the storm says them
    assert found[Kind.PAUSE_STORM].severity == "critical"
    warning = kinds(view(tx_pause_storm_warning_events=1))[Kind.PAUSE_STORM]
    assert warning.severity == "warning"
    assert "stalled past its watermark 1 time(s) in the last 10 s (tx_pause_storm_warning_events)" in warning.message


def test_a_cnp_storm_says_which_way_the_congestion_is():
    found = kinds(view(rp_cnp_handled=1_500_000))[Kind.CNP_STORM]  # 150,000/s
    assert "handled 150,000 CNPs/s (rp_cnp_handled)" in found.message and "np_cnp_sent" not in found.message
    both = kinds(view(rp_cnp_handled=1_500_000, np_cnp_sent=2_000_000, np_ecn_marked_roce_packets=2_000_000))
    message = both[Kind.CNP_STORM].message
    assert "sent 200,000 CNPs/s (np_cnp_sent) for 200,000 ECN-marked packets/s arriving" in message
    assert "congestion on the path to this host (incast at its switch port)" in message
    assert kinds(view(rp_cnp_handled=100_000, np_cnp_sent=100_000)) == {}  # 10,000/s is the threshold, not over


@pytest.mark.parametrize(
    ("counter", "per_poll", "fires"),
    [
        (roce.OUT_OF_SEQUENCE, 1000, False),  # 100/s: NVSentinel's threshold, not over it
        (roce.OUT_OF_SEQUENCE, 1010, True),
        (roce.LOCAL_ACK_TIMEOUT, 11, True),
        (roce.PACKET_SEQ_ERR, 10, False),
    ],
)
def test_roce_packet_loss_thresholds(counter, per_poll, fires):
    found = kinds(view(**{counter: per_poll}))
    assert (Kind.ROCE_LOSS in found) is fires
    if fires:
        assert f"({counter}, over " in found[Kind.ROCE_LOSS].message
        assert "RoCE packets lost on a network that should drop none" in found[Kind.ROCE_LOSS].message


def test_drops_on_arrival():
    found = kinds(view(rx_discards_phy=50))[Kind.RX_DISCARDS]
    assert found.message == (
        "cn006 mlx5_0/1: dropping 5 frames/s on arrival for lack of receive buffer over the last 10 s "
        "(rx_discards_phy, over 1/s): the NIC cannot absorb what the switch sends; check that PFC is on for the "
        "priority, and that the host drains its queues"
    )


def test_an_unknown_counter_holds_its_kind_and_judge_port_carries_the_findings():
    v = view(rx_prio3_pause_duration=3_000_000)
    deltas = dict(v.deltas)
    deltas[roce.CNP_SENT] = None  # the first poll after a reset, say
    held = PortView("cn006", "mlx5_0", 1, ts=1000.0, interval_s=10.0, link_layer="Ethernet", deltas=deltas)
    assert unknown_keys(held) == {"cnp_storm:cn006/mlx5_0/1"}
    j = judge_port(held)
    assert "cnp_storm:cn006/mlx5_0/1" in j.unknown
    assert [f.key for f in j.findings if f.kind in KIND_COUNTERS] == ["pfc_pause_received:cn006/mlx5_0/1"]


def test_nonsense_deltas_and_intervals_never_raise():
    for bad in (None, -5, float("nan"), float("inf"), 2**70, "x", True):
        v = view(**dict.fromkeys((roce.STORM_ERROR, roce.CNP_HANDLED, roce.pause_duration("rx", 3)), bad))
        judge_lossless(v, DEFAULT)
    assert judge_lossless(view(interval=0.0, tx_pause_storm_error_events=3), DEFAULT) == []


def test_a_roce_port_pausing_a_little_stays_quiet_and_one_over_a_threshold_is_judged_in_full():
    from fabricweb.health.engine import quiet

    calm = PortView("cn006", "mlx5_0", 1, ts=1000.0, interval_s=10.0, state_id=4, link_layer="Ethernet",
                    ever_up=True, deltas=dict(QUIET))  # fmt: skip

    def moved(**deltas) -> PortView:
        return PortView(**{**{f: getattr(calm, f) for f in calm.__dataclass_fields__}, "deltas": deltas})

    key = quiet.inputs(calm, DEFAULT)
    assert key is not None
    # Under every threshold (1% paused, a few CNPs): the same judgement, so the same key.
    assert quiet.inputs(moved(**{**QUIET, roce.wire(roce.pause_duration("rx", 3)): 100_000, roce.CNP_SENT: 30}),
                        DEFAULT) == key  # fmt: skip
    for counter, over in ((roce.wire(roce.STORM_WARNING), 1), (roce.CNP_HANDLED, 200_000),
                          (roce.wire(roce.pause_duration("tx", 3)), 5_000_000)):  # fmt: skip
        assert quiet.inputs(moved(**{**QUIET, counter: over}), DEFAULT) is None, counter
    # A lossless counter unknown at this poll holds its kind: another key, the same as judge_port's unknown.
    held = moved(**{**QUIET, roce.CNP_SENT: None})
    assert quiet.inputs(held, DEFAULT) not in (None, key)
    assert "cnp_storm:cn006/mlx5_0/1" in judge_port(held).unknown
    assert not set(quiet.STILL) & {c for cs in KIND_COUNTERS.values() for c in cs}
    assert set(quiet.STILL_ROCE) - set(quiet.STILL) == {c for cs in KIND_COUNTERS.values() for c in cs}


def test_a_critical_pause_storm_says_why_it_is_critical():
    from fabricweb.health.records.critical import critical_reason

    storm = kinds(view(tx_pause_storm_error_events=1))[Kind.PAUSE_STORM]
    assert critical_reason(storm.kind, storm.details) == (
        "critical: the rule: the NIC stalled past its pause-storm timeout and stopped sending PFC pause, so frames drop"
    )
