"""Arbitrary inputs never make the rules raise, and the judgement layer stays free of Django."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.link import SPEEDS, WIDTHS, Rate, make_rate
from fabricweb.health.expectation import LinkPolicy, Majority, fabric_majority
from fabricweb.health.findings import Severity
from fabricweb.health.lifecycle import OpenEvent, step
from fabricweb.health.rules import judge_node, judge_port, judge_ports
from fabricweb.health.view import HopView, PcieView, PortView

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


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(port_views)
def test_arbitrary_port_views_never_raise_and_give_json_ready_findings(view):
    judgement = judge_port(view)
    for f in judgement.findings:
        assert f.severity in set(Severity)
        assert f.key.startswith(f"{f.kind}:")
        assert f.message
        json.dumps(dict(f.details), allow_nan=False)
    # What the rules found is never also "unknown".
    assert not judgement.unknown & {f.key for f in judgement.findings}


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(port_views, max_size=4), st.lists(st.booleans(), max_size=5))
def test_lifecycle_never_raises_whatever_the_rules_and_stored_events(views, keep):
    judgement = judge_ports(views)
    stored = [
        OpenEvent(f.key, str(f.kind), f.severity, f.message, clean_polls=i)
        for i, (f, k) in enumerate(zip(judgement.findings, keep, strict=False))
        if k
    ]
    actions = step(stored, judgement.findings, unknown=judgement.unknown)
    assert len({a.key for a in actions}) == len(actions)


@given(st.text(max_size=10), st.integers(-5, 10), st.one_of(st.none(), st.floats(allow_nan=True)))
def test_the_staleness_check_never_raises(node, missed, interval):
    judge_node(node, missed, interval)


@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=6)), links), max_size=30))
def test_fabric_majority_never_raises_and_counts_at_most_the_total(ports):
    for majority in fabric_majority(ports).values():
        assert 0 < majority.count <= majority.total


def test_the_judgement_modules_import_no_django():
    """Health rules are pure functions (docs/design.md): none of these files may import Django, nor any of
    fabricweb but the thresholds, which are pure too."""
    package = Path(__file__).resolve().parents[2] / "fabricweb" / "health"
    pure = ["expectation", "lifecycle", "findings", "view", "window", "../thresholds"]
    rules = [f"rules/{p.stem}" for p in sorted((package / "rules").glob("*.py"))]
    assert "rules/port" in rules
    for name in [*pure, *rules]:
        tree = ast.parse((package / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]} if node.level == 0 else set()
                if node.level and node.module in {"models", "apps", "admin", "views", "tasks"}:
                    roots = {"django"}
                if node.level == 0 and node.module == "fabricweb.thresholds":
                    roots = set()
            else:
                continue
            assert not roots & {"django", "celery", "fabricweb"}, f"{name}.py imports {roots}"
