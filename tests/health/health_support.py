"""Hypothesis strategies of the health property tests: port, PCIe and hop views as ingest builds them, link
policies and majorities, counters, deltas and polls (test_health_properties, test_health_quiet and
test_health_trailing draw from them)."""

from __future__ import annotations

from hypothesis import strategies as st

from collectors.link import SPEEDS, WIDTHS, Rate, make_rate
from fabricweb.health.rules.expectation import LinkPolicy, Majority
from fabricweb.health.rules.view import HopView, PcieView, PortView

COUNTERS = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_wait",
    "port_xmit_data",
]

real_links = st.builds(make_rate, st.sampled_from([s.name for s in SPEEDS]), st.sampled_from(WIDTHS))

junk_links = st.builds(
    Rate,
    st.floats(allow_nan=True, allow_infinity=True),
    st.one_of(st.none(), st.integers(-5, 40)),
    st.one_of(st.none(), st.text(max_size=6)),
)

links = st.one_of(st.none(), real_links, junk_links, st.just(Rate(0.0, None, None)))

numbers = st.one_of(st.none(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True))

deltas = st.dictionaries(st.one_of(st.sampled_from(COUNTERS), st.text(max_size=8)), numbers, max_size=12)

polls = st.lists(st.tuples(numbers, numbers, deltas), max_size=30)

policies = st.one_of(
    st.none(),
    st.builds(
        LinkPolicy,
        st.text(max_size=10),
        speed=st.one_of(st.none(), st.sampled_from([s.name for s in SPEEDS]), st.text(max_size=4)),
        lanes=st.one_of(st.none(), st.integers(-1, 16)),
        expect_up=st.booleans(),
    ),
)

majorities = st.one_of(
    st.none(), st.builds(Majority, st.text(max_size=8), real_links, st.integers(-3, 50), st.integers(-3, 50))
)

hop_views = st.builds(
    HopView,
    st.text(max_size=12),
    st.sampled_from(["PCIe switch uplink", "root port", "PCIe switch port"]),
    *[numbers] * 4,
)

paths = st.one_of(st.none(), st.lists(hop_views, max_size=4).map(tuple))

pcie_views = st.one_of(st.none(), st.builds(PcieView, numbers, numbers, numbers, numbers, paths))

small_ints = st.integers(-3, 10)

port_views = st.builds(
    PortView,
    node=st.text(max_size=12),
    device=st.text(max_size=12),
    port=st.integers(-1, 300),
    ts=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40)),
    interval_s=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6)),
    hca_type=st.one_of(st.none(), st.text(max_size=8)),
    state_id=st.one_of(st.none(), st.integers(-1, 9)),
    state_name=st.one_of(st.none(), st.text(max_size=12)),
    phys_state_id=st.one_of(st.none(), st.integers(-1, 9)),
    phys_state_name=st.one_of(st.none(), st.text(max_size=12)),
    state_polls=small_ints,
    link=links,
    link_layer=st.one_of(st.none(), st.sampled_from(["InfiniBand", "Ethernet", "Unknown"]), st.text(max_size=8)),
    ever_up=st.booleans(),
    policy=policies,
    best_link=links,
    majority=majorities,
    deltas=deltas,
    capped=st.frozensets(st.sampled_from(COUNTERS)),
    recent=polls,
    pcie=pcie_views,
    node_missed_polls=small_ints,
    device_missing_polls=small_ints,
    port_missing_polls=small_ints,
)
