"""Covers collectors/link.py, fabricweb/health/engine/quiet.py, fabricweb/health/rules/expectation.py,
fabricweb/health/rules/, fabricweb/health/rules/view.py, fabricweb/thresholds.py.

The engine's quiet-port shortcut never changes a judgement (fabricweb.health.engine.quiet)."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from collectors.link import make_rate
from fabricweb.health.engine import quiet
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.expectation import LinkPolicy
from fabricweb.health.rules.view import PcieView, PortView
from fabricweb.thresholds import DEFAULT
from tests.health.health_support import links, majorities, numbers, pcie_views, policies, port_views

STILL = list(quiet.STILL)
WAIT = quiet.WAIT
names = st.sampled_from([*STILL, "port_xmit_data", "VL15_dropped"])
zero_or_unknown = st.dictionaries(names, st.sampled_from([0, None]))
waits = st.one_of(st.none(), st.integers(0, 10**9), numbers)
with_wait = st.tuples(zero_or_unknown, waits).map(lambda x: {**x[0], WAIT: x[1]} if x[1] is not None else x[0])
quiet_ring = st.lists(st.tuples(st.floats(0, 2e9), numbers, with_wait).map(list), max_size=8)
intervals = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6))
quiet_views = st.builds(
    PortView,
    node=st.text(max_size=6),
    device=st.text(max_size=6),
    port=st.integers(0, 4),
    ts=st.floats(0, 2e9),
    interval_s=intervals,
    state_id=st.one_of(st.sampled_from([4, 5]), st.integers(-1, 9)),
    phys_state_id=st.one_of(st.none(), st.integers(-1, 9)),
    state_polls=st.integers(-3, 10**6),
    link=links,
    link_layer=st.one_of(st.none(), st.sampled_from(["InfiniBand", "Ethernet"])),
    ever_up=st.booleans(),
    policy=policies,
    best_link=links,
    majority=majorities,
    deltas=with_wait,
    recent=quiet_ring,
    pcie=pcie_views,
)
# Congestion findings come easily: a 1 ns tick share over 1%.
TOUCHY = dataclasses.replace(DEFAULT, congestion_share=0.01, congestion_window_s=60.0)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(quiet_views, st.floats(0, 2e9), intervals, st.integers(), quiet_ring, waits, st.sampled_from([DEFAULT, TOUCHY]))
def test_it_rejudges_a_quiet_port_as_the_rules_would(view, ts, interval, polls, ring, wait, t):
    key = quiet.inputs(view, t)
    assume(key is not None)
    deltas = {c: view.deltas.get(c) for c in STILL if c in view.deltas}
    if wait is not None:
        deltas[WAIT] = wait
    other = dataclasses.replace(view, ts=ts, interval_s=interval, state_polls=polls, recent=ring, deltas=deltas)
    assume(quiet.inputs(other, t) == key)
    assert quiet.rejudge(other, t, judge_port(view, t)) == judge_port(other, t)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(port_views)
def test_a_view_it_calls_quiet_rejudges_as_the_rules_would(view):
    key = quiet.inputs(view, DEFAULT)
    if key is None:
        return
    twin = dataclasses.replace(view, ts=1.0, interval_s=10.0, state_polls=1, recent=())
    assert quiet.inputs(twin, DEFAULT) == key
    assert quiet.rejudge(view, DEFAULT, judge_port(twin)) == judge_port(view)


def _active(**changes) -> PortView:
    base = PortView(
        "cn001",
        "mlx5_0",
        1,
        ts=1000.0,
        state_id=4,
        phys_state_id=5,
        link=make_rate("EDR", 4),
        ever_up=True,
        deltas=dict.fromkeys(STILL, 0),
    )
    return dataclasses.replace(base, **changes)


def test_it_calls_an_error_free_active_port_quiet():
    assert quiet.inputs(_active(), DEFAULT) is not None
    assert quiet.inputs(_active(recent=[[990.0, 10.0, {}], [995.0, 5.0, {"symbol_error": None}]]), DEFAULT) is not None


def test_it_is_not_quiet_when_an_error_counter_moves_now_or_in_the_last_hour():
    assert quiet.inputs(_active(deltas={**dict.fromkeys(STILL, 0), "symbol_error": 1}), DEFAULT) is None
    assert quiet.inputs(_active(recent=[[990.0, 10.0, {"link_downed": 1}]]), DEFAULT) is None
    assert quiet.inputs(_active(recent=[[990.0, 10.0, {"symbol_error": 0.5}]]), DEFAULT) is None
    assert quiet.inputs(_active(recent=["junk"]), DEFAULT) is None


def test_waiting_for_credits_alone_keeps_a_port_quiet():
    assert quiet.inputs(_active(deltas={**dict.fromkeys(STILL, 0), "port_xmit_wait": 7}), DEFAULT) is not None
    assert quiet.inputs(_active(recent=[[990.0, 10.0, {"port_xmit_wait": 10**9}]]), DEFAULT) is not None


def test_an_unused_port_is_quiet_but_one_expected_up_or_waiting_for_an_sm_is_not():
    assert quiet.inputs(_active(state_id=1, phys_state_id=2, ever_up=False), DEFAULT) is not None
    assert quiet.inputs(_active(state_id=2, phys_state_id=5, ever_up=False), DEFAULT) is None


def test_it_is_not_quiet_for_a_port_down_capped_or_missing():
    assert quiet.inputs(_active(state_id=1, phys_state_id=2), DEFAULT) is None
    assert quiet.inputs(_active(capped=frozenset({"port_xmit_wait"})), DEFAULT) is None
    assert quiet.inputs(_active(port_missing_polls=1), DEFAULT) is None


def test_what_it_depends_on_changes_its_inputs():
    key = quiet.inputs(_active(), DEFAULT)
    for changed in (
        _active(link=make_rate("HDR", 4)),
        _active(device_id=0xCF08),  # a Switch-IB 2: one wait count is 16 times the bytes
        _active(best_link=make_rate("HDR", 4)),
        _active(policy=LinkPolicy("all", speed="HDR", lanes=4)),
        _active(pcie=PcieView(8.0, 8, 16.0, 16)),
        _active(deltas={**dict.fromkeys(STILL, 0), "symbol_error": None}),
    ):
        assert quiet.inputs(changed, DEFAULT) != key
    assert quiet.inputs(_active(), dataclasses.replace(DEFAULT, symbol_errors_per_hour=1)) != key


def test_unused_counters_do_not_matter():
    assert quiet.inputs(_active(deltas={**dict.fromkeys(STILL, 0), "VL15_dropped": 9}), DEFAULT) is not None


def test_it_opens_and_clears_congestion_on_a_quiet_port_as_the_rules_do():
    calm = _active(deltas={**dict.fromkeys(STILL, 0), WAIT: 0})
    last = judge_port(calm)
    # 4X EDR, 12.5e9 B/s, at the assumed 8 bytes per count: 2.5e10 B lost of the 20 s seen, 10% of the link's time.
    waits = 1_562_500_000
    busy = _active(deltas={**dict.fromkeys(STILL, 0), WAIT: waits}, recent=[[990.0, 10.0, {WAIT: waits}]])
    assert quiet.inputs(busy, DEFAULT) == quiet.inputs(calm, DEFAULT)
    congested = quiet.rejudge(busy, DEFAULT, last)
    assert congested == judge_port(busy)
    assert [f.kind for f in congested.findings] == ["congestion"]
    words = congested.findings[0].message
    assert "congested: 10% of the link's time lost waiting for credits in the last 20 s" in words
    assert quiet.rejudge(calm, DEFAULT, congested) == last
