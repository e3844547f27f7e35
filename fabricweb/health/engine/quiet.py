"""When judging a port again can only repeat itself: the engine's shortcut for quiet ports.

Most ports at most polls are ACTIVE (or unused) and count no errors. For such a port
every counter rule but congestion finds nothing whatever the ts, interval, state_polls
or window sums, so `rules.judge_port` depends only on the link, the expectation's
inputs, the PCIe link, which rule counters are unknown this poll, and the congestion
rule. `inputs` returns the former, or None when the port is not quiet; while they are
equal, `rejudge` rebuilds judge_port's result from the port's last judgement plus the
congestion rule alone (one window instead of three, one counter instead of all).
tests/health/test_health_quiet.py checks rejudge against judge_port on arbitrary views.

Quiet means: observed this poll (not missing), no capped counter, ACTIVE or down and
not expected up (an unused port), and every counter a rule reads except port_xmit_wait
is 0 or unknown (None) in this poll and in every earlier poll of the ring. Anything
else (a non-int value, a malformed ring entry) is not quiet: the full rules run.
"""

from __future__ import annotations

from collectors.facts import XMIT_WAIT
from fabricweb.thresholds import Thresholds

from ..rules import (
    ARMED,
    INIT,
    KIND_COUNTERS,
    ROCE_COUNTERS,
    Judgement,
    congestion,
    ethernet,
    expect_up,
    lossless_quiet,
)
from ..rules.findings import Finding, Kind, port_key
from ..rules.view import LINK_UP, PortView
from ..rules.window import Windows, known_delta

WAIT = XMIT_WAIT
_PCIE_KINDS = (Kind.PCIE, Kind.PCIE_PATH)
# Counters that must be still for a port to be quiet: every one a rule reads, but the wait.
STILL: tuple[str, ...] = tuple(sorted({c for names in KIND_COUNTERS.values() for c in names} - {WAIT} - ROCE_COUNTERS))
# With a RoCE port's lossless counters (rules/lossless.py): what the fast path compares (memo.raw_inputs). quiet.inputs
# asks the lossless rules instead, which judge one poll's deltas: a RoCE port pausing a little is quiet.
STILL_ROCE: tuple[str, ...] = STILL + tuple(sorted(ROCE_COUNTERS))


def inputs(view: PortView, t: Thresholds) -> tuple | None:
    """What judge_port's result depends on for a quiet port (congestion aside), comparable with ==; else None."""
    if view.node_missed_polls or view.device_missing_polls or view.port_missing_polls or view.capped:
        return None
    if not view.is_active and not _unused(view):
        return None
    roce = view.link_layer != "InfiniBand" and ethernet(view)  # (the common case told at once)
    lossless = lossless_quiet(view, t) if roce else frozenset()
    if lossless is None:
        return None  # a lossless finding at this poll: judged in full
    deltas = view.deltas
    unknown = []
    for c in STILL:
        value = deltas.get(c)
        if value is None:
            unknown.append(c)
        elif type(value) is not int or value != 0:
            return None
    for entry in view.recent:
        if type(entry) not in (list, tuple) or len(entry) != 3 or type(entry[2]) is not dict:
            return None
        moved = entry[2]
        if moved and (len(moved) > 1 or WAIT not in moved):
            for c in STILL:
                value = moved.get(c, 0)
                if value is not None and (type(value) is not int or value != 0):
                    return None
    return (
        t,
        view.node,
        view.device,
        view.port,
        view.state_id,
        view.state_name,
        view.phys_state_id,
        view.phys_state_name,
        view.link,
        view.device_id,  # with the link, what one port_xmit_wait count is worth
        view.link_layer,
        view.ever_up,
        view.policy,
        view.best_link,
        view.majority,
        view.pcie,
        view.far_end,
        view.capability,
        view.link_owner,
        tuple(unknown),
        known_delta(deltas.get(WAIT)) is None,
        lossless,
    )


def _unused(view: PortView) -> bool:
    """Down, and nothing says it should be up: the state rule says nothing, whatever state_polls."""
    if type(view.state_id) is not int or expect_up(view):
        return False
    return not (view.phys_state_id == LINK_UP and view.state_id in (INIT, ARMED) and not ethernet(view))


def rejudge(view: PortView, t: Thresholds, last: Judgement) -> Judgement:
    """judge_port(view, t), given `last`: its judgement of a view with the same `inputs`."""
    congested = congestion(view, Windows(view, (t.congestion_window_s,), (WAIT,)), t)
    key = port_key(Kind.CONGESTION, view.node, view.device, view.port)
    return settle(last, congested, known_delta(view.deltas.get(WAIT)) is None, key)


def settle(last: Judgement, congested: Finding | None, wait_unknown: bool, key: str) -> Judgement:
    """`last` with this poll's congestion finding (`key` its key) in place of its own."""
    findings = [f for f in last.findings if f.kind is not Kind.CONGESTION]
    unknown = last.unknown - {key}
    if congested is not None:
        # judge_port's order: the port's findings, congestion, then the device's PCIe findings.
        at = next((i for i, f in enumerate(findings) if f.kind in _PCIE_KINDS), len(findings))
        findings.insert(at, congested)
    elif wait_unknown:
        unknown = unknown | {key}
    if findings == last.findings and unknown == last.unknown:
        return last
    return Judgement(findings, unknown, last.expectation)
