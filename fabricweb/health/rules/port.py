"""A port at one poll: every rule run on its view, what it could not judge, and ports gone missing."""

from __future__ import annotations

from collections.abc import Iterable

from collectors import pcie
from fabricweb.thresholds import DEFAULT, Thresholds

from .common import CRITICAL, DEVICE_KINDS, INFO, LINK_KINDS, PORT_KINDS, Judgement, ethernet, expect_up
from .counters import COUNTER_RULES, KIND_COUNTERS, capped, congestion, counter, symbol_errors
from .expectation import expected_link, usable
from .findings import Finding, Kind, device_key, merge_findings, port_key, port_label
from .link import down_while_flapping, flapping, state, up_because
from .lossless import judge_lossless
from .lossless import unknown_keys as lossless_unknown
from .node import judge_node
from .pcie import judge_pcie
from .pciepath import judge_path
from .view import PortView
from .window import HOUR_S, MINUTE_S, Windows, known_delta


def judge_ports(views: Iterable[PortView], t: Thresholds = DEFAULT) -> Judgement:
    """Every port of one node's snapshot: findings merged by key, unknown keys united."""
    findings: list[Finding] = []
    unknown: set[str] = set()
    for view in views:
        j = judge_port(view, t)
        findings.extend(j.findings)
        unknown |= j.unknown
    merged = merge_findings(findings)
    return Judgement(merged, frozenset(unknown - {f.key for f in merged}))


def judge_port(view: PortView, t: Thresholds = DEFAULT) -> Judgement:
    """All findings for one port at one poll."""
    every_port_key = {port_key(k, view.node, view.device, view.port) for k in PORT_KINDS}
    every_device_key = {device_key(k, view.node, view.device) for k in DEVICE_KINDS}

    # Old data says nothing about now: judge only what is missing, hold the rest.
    if view.node_missed_polls > 0:
        found = judge_node(view.node, view.node_missed_polls, view.interval_s, t).findings
        return Judgement(found, frozenset(every_port_key | every_device_key))
    if view.device_missing_polls > 0:
        found = _vanished(view, t, device=True)
        return Judgement(found, frozenset(every_port_key | every_device_key) - {f.key for f in found})
    if view.port_missing_polls > 0:
        found = _vanished(view, t, device=False)
        return Judgement(found, frozenset(every_port_key) - {f.key for f in found})

    # A RoCE port runs at whatever its Ethernet switch does: InfiniBand peers of the same model set no norm.
    majority = None if ethernet(view) else view.majority
    exp = expected_link(view.policy, view.best_link, majority, t.fabric_min_ports, view.capability)
    windows = Windows(view, (MINUTE_S, t.congestion_window_s, t.flapping_quiet_s, HOUR_S))
    found = [
        state(view, exp, windows, t),
        symbol_errors(view, windows, t),
        flapping(view, windows, t),
        *(counter(view, windows, rule, t) for rule in COUNTER_RULES),
        congestion(view, windows, t),
        capped(view),
        *judge_lossless(view, t),
        judge_pcie(view, exp),
        judge_path(view, exp),
    ]
    findings = [f for f in found if f is not None and (view.link_owner or f.kind not in LINK_KINDS)]
    unknown = _unknown_keys(view, windows, t)
    if not view.link_owner:  # the far end speaks for the link: this end's quiet is not news about it
        unknown -= {port_key(k, view.node, view.device, view.port) for k in LINK_KINDS}
    return Judgement(findings, frozenset(unknown - {f.key for f in findings}), exp)


def _unknown_keys(view: PortView, w: Windows, t: Thresholds) -> set[str]:
    def key(kind: Kind) -> str:
        return port_key(kind, view.node, view.device, view.port)

    unknown = set()
    if down_while_flapping(view, w, t):
        unknown.add(key(Kind.DOWN))  # down now, told by the flapping finding: not a clean poll for DOWN
    if view.state_id is None:
        unknown |= {key(Kind.DOWN), key(Kind.NO_SM), key(Kind.DEGRADED)}
    elif view.is_active and usable(view.link) is None:
        unknown.add(key(Kind.DEGRADED))
    for kind, counters in KIND_COUNTERS.items():
        if any(known_delta(view.deltas.get(c)) is None for c in counters):
            unknown.add(key(kind))
    unknown |= lossless_unknown(view)
    if view.pcie is None or pcie.usable_gbps(view.pcie.current_gts, view.pcie.current_width) is None:
        unknown.add(device_key(Kind.PCIE, view.node, view.device))
    if view.pcie is None or view.pcie.path is None:  # its agent sends no PCIe tree
        unknown.add(device_key(Kind.PCIE_PATH, view.node, view.device))
    return unknown


def _vanished(view: PortView, t: Thresholds, device: bool) -> list[Finding]:
    polls = view.device_missing_polls if device else view.port_missing_polls
    if polls < t.vanished_after_polls:
        return []
    severity = CRITICAL if expect_up(view) else INFO
    # Judged once, as it vanishes (telemetry/storage/budget.py): the words must stay true while it is gone.
    missing = "missing from its node's snapshots" + (f" ({polls} in a row)" if polls > 1 else "")
    if device:
        key = device_key(Kind.VANISHED, view.node, view.device)
        text = (
            f"{view.node} {view.device}: device vanished, {missing} "
            "(the HCA fell off the PCIe bus or its driver was unloaded)"
        )
    else:
        key = port_key(Kind.VANISHED, view.node, view.device, view.port)
        text = f"{port_label(view.node, view.device, view.port)}: port vanished, {missing}"
    details: dict[str, object] = {"missing_polls": polls}
    if severity is CRITICAL:
        details["expected_up_because"] = up_because(view)
    return [Finding(Kind.VANISHED, severity, key, text, details)]
