"""Health rules: a port's view in, findings out. Pure: no I/O, no clock, no Django.

`judge_port` runs every rule on one PortView; `judge_ports` does a whole node's
snapshot and merges device- and node-level findings; `judge_node` is the
staleness check for a node that sent nothing. Each result also names the keys
it could not judge (stale data, unknown counters): lifecycle holds those events
open instead of counting the poll as clean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from collectors import pcie
from collectors.link import Rate, judge_link

from .expectation import Expectation, expected_link, usable
from .findings import Finding, Kind, Severity, device_key, link_label, merge_findings, node_key, port_key, port_label
from .thresholds import DEFAULT, Thresholds
from .view import LINK_UP, PortView
from .window import HOUR_S, MINUTE_S, Count, Windows, known_delta

CRITICAL, WARNING, INFO = Severity.CRITICAL, Severity.WARNING, Severity.INFO

INIT, ARMED = 2, 3

# What each physical state (ibstat's words) usually means for a port that should be up.
PHYS_MEANING = {
    1: "the port is powered down",
    2: "no cable or the peer is off",
    3: "disabled by an administrator or the subnet manager",
    4: "the link is still training; stuck here, the two ends cannot agree on speed or width",
    5: "the link is up but the port is not",
    6: "the link is retraining after errors; check the cable",
    7: "the port is in a physical test mode",
}

PORT_KINDS = (
    Kind.DOWN,
    Kind.DEGRADED,
    Kind.NO_SM,
    Kind.SYMBOL_ERRORS,
    Kind.FLAPPING,
    Kind.RCV_ERRORS,
    Kind.REMOTE_PHYSICAL_ERRORS,
    Kind.XMIT_DISCARDS,
    Kind.LINK_INTEGRITY,
    Kind.BUFFER_OVERRUN,
    Kind.CONGESTION,
    Kind.CAPPED,
    Kind.VANISHED,
)
DEVICE_KINDS = (Kind.PCIE, Kind.VANISHED)
# A link's own state: one problem for the whole cable, said by the end that speaks for it (PortView.link_owner).
LINK_KINDS = frozenset({Kind.DOWN, Kind.DEGRADED, Kind.NO_SM, Kind.FLAPPING})


@dataclass(frozen=True, slots=True)
class CounterRule:
    """A counter whose count over the last hour is judged against one threshold."""

    kind: Kind
    counter: str
    threshold: str  # Thresholds field name
    severity: Severity
    unit: str
    meaning: str


COUNTER_RULES = (
    CounterRule(
        Kind.RCV_ERRORS,
        "port_rcv_errors",
        "port_rcv_errors_per_hour",
        WARNING,
        "receive errors/h",
        "malformed packets arrive on this link; check the cable",
    ),
    CounterRule(
        Kind.REMOTE_PHYSICAL_ERRORS,
        "port_rcv_remote_physical_errors",
        "remote_physical_errors_per_hour",
        INFO,  # not this port's fault, and every port behind the bad link sees it
        "remote physical errors/h",
        "packets arrive already marked bad: the fault is upstream, elsewhere in the fabric",
    ),
    CounterRule(
        Kind.XMIT_DISCARDS,
        "port_xmit_discards",
        "xmit_discards_per_hour",
        WARNING,
        "transmit discards/h",
        "packets dropped on send: congestion, or a peer that stopped taking data",
    ),
    CounterRule(
        Kind.LINK_INTEGRITY,
        "local_link_integrity_errors",
        "local_link_integrity_errors_per_hour",
        CRITICAL,
        "link integrity errors/h",
        "the link's physical errors went over the port's limit; check or replace the cable",
    ),
    CounterRule(
        Kind.BUFFER_OVERRUN,
        "excessive_buffer_overrun_errors",
        "buffer_overrun_errors_per_hour",
        CRITICAL,
        "buffer overrun errors/h",
        "the peer overran this port's receive buffers: flow control on this link is broken",
    ),
)

# Counter each port kind is computed from: when this poll's delta is unknown, so is the kind.
KIND_COUNTERS = {
    Kind.SYMBOL_ERRORS: ("symbol_error",),
    Kind.FLAPPING: ("link_error_recovery", "link_downed"),
    Kind.CONGESTION: ("port_xmit_wait",),
    **{r.kind: (r.counter,) for r in COUNTER_RULES},
}


@dataclass(frozen=True, slots=True)
class Judgement:
    findings: list[Finding]
    unknown: frozenset[str]  # keys this poll says nothing about: hold their events
    expectation: Expectation | None = None


def judge_node(
    node: str, missed_polls: int, interval_s: float | None = None, t: Thresholds = DEFAULT, *, collector: bool = False
) -> Judgement:
    """A node (or, `collector`, a fabric collector) that has sent no snapshot for `missed_polls` polls."""
    if not isinstance(missed_polls, int) or missed_polls < t.stale_after_polls:
        return Judgement([], frozenset())
    ago = f" (~{_fmt_s(missed_polls * interval_s)})" if _positive(interval_s) else ""
    if collector:
        message = (
            f"{node}: no fabric sweep for {missed_polls} polls{ago}: the fabric collector or its host is down, "
            "and the switches are not being read"
        )
    else:
        message = f"{node}: no snapshot for {missed_polls} polls{ago}: the node or its fabricweb worker is down"
    return Judgement(
        [Finding(Kind.STALE, WARNING, node_key(Kind.STALE, node), message, {"missed_polls": missed_polls})], frozenset()
    )


def judge_clock(node: str, skew_s: float, t: Thresholds = DEFAULT) -> list[Finding]:
    """A node whose snapshot is dated `skew_s` seconds after (negative: before) it arrived here.

    Ahead can only be the node's clock; behind is its clock or a backlog before ingest. In whole
    minutes, so a steady skew is one unchanging event, not an update every poll.
    """
    if not math.isfinite(skew_s) or abs(skew_s) < t.clock_skew_s:
        return []
    minutes = max(1, round(abs(skew_s) / 60))
    if skew_s > 0:
        message = f"{node}: clock ~{minutes} min ahead of this server's (snapshots dated after they arrive): check NTP"
    else:
        message = (
            f"{node}: snapshots arrive ~{minutes} min after they are read: "
            "the node's clock is behind (check NTP) or ingest is backlogged"
        )
    key = node_key(Kind.CLOCK_SKEW, node)
    return [Finding(Kind.CLOCK_SKEW, INFO, key, message, {"skew_minutes": minutes if skew_s > 0 else -minutes})]


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
    majority = None if _ethernet(view) else view.majority
    exp = expected_link(view.policy, view.best_link, majority, t.fabric_min_ports, view.capability)
    windows = Windows(view, (MINUTE_S, t.congestion_window_s, t.flapping_quiet_s, HOUR_S))
    found = [
        _state(view, exp, windows, t),
        _symbol_errors(view, windows, t),
        _flapping(view, windows, t),
        *(_counter(view, windows, rule, t) for rule in COUNTER_RULES),
        _congestion(view, windows, t),
        _capped(view),
        _pcie(view, exp),
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
    if _down_while_flapping(view, w, t):
        unknown.add(key(Kind.DOWN))  # down now, told by the flapping finding: not a clean poll for DOWN
    if view.state_id is None:
        unknown |= {key(Kind.DOWN), key(Kind.NO_SM), key(Kind.DEGRADED)}
    elif view.is_active and usable(view.link) is None:
        unknown.add(key(Kind.DEGRADED))
    for kind, counters in KIND_COUNTERS.items():
        if any(known_delta(view.deltas.get(c)) is None for c in counters):
            unknown.add(key(kind))
    if view.pcie is None or pcie.usable_gbps(view.pcie.current_gts, view.pcie.current_width) is None:
        unknown.add(device_key(Kind.PCIE, view.node, view.device))
    return unknown


def _down_while_flapping(view: PortView, w: Windows, t: Thresholds) -> bool:
    """Down now and down before within the hour, still bouncing: the flapping finding speaks, not a new DOWN."""
    if view.state_id is None or view.is_active or not _expect_up(view):
        return False
    return w.count("link_downed", HOUR_S).total > t.link_downed_per_hour and _bounced_lately(w, t)


def _bounced_lately(w: Windows, t: Thresholds) -> bool:
    """The link went down or retrained within flapping_quiet_s: a link quiet for longer has stopped flapping."""
    quiet = t.flapping_quiet_s
    return w.count("link_downed", quiet).total > 0 or w.count("link_error_recovery", quiet).total > 0


def _ethernet(view: PortView) -> bool:
    return isinstance(view.link_layer, str) and view.link_layer.lower() == "ethernet"


def _expect_up(view: PortView) -> bool:
    # An operator's word beats history both ways: a spare port marked expect_up=False stays quiet.
    return view.policy.expect_up if view.policy is not None else view.ever_up


def _finding(view: PortView, kind: Kind, severity: Severity, text: str, **details: object) -> Finding:
    label = link_label(view.node, view.device, view.port, view.far_end)
    if view.far_end:
        details["far_end"] = view.far_end
    return Finding(kind, severity, port_key(kind, view.node, view.device, view.port), f"{label}: {text}", details)


# --- link state ---------------------------------------------------------------


def _state(view: PortView, exp: Expectation, w: Windows, t: Thresholds) -> Finding | None:
    if view.state_id is None:
        return None  # unreadable state: nothing to say, and nothing cleared
    if view.is_active:
        return _degraded(view, exp)
    expect_up = _expect_up(view)
    if view.phys_state_id == LINK_UP and view.state_id in (INIT, ARMED) and not _ethernet(view):
        # The cable and peer are fine; only a subnet manager brings a port from INIT to ACTIVE.
        if view.state_polls < t.no_sm_after_polls or (view.policy is not None and not expect_up):
            return None
        return _finding(
            view,
            Kind.NO_SM,
            CRITICAL if expect_up else WARNING,
            f"link is up (LinkUp) but the port is {view.state_text}: "
            "the subnet manager is not answering (run sminfo, check opensm)",
            state=view.state_text,
            phys_state="LinkUp",
            polls=view.state_polls,
        )
    if not expect_up or view.state_polls < t.down_after_polls:
        return None  # never up and no policy: an unused port, not an alarm
    if _down_while_flapping(view, w, t):
        return None  # one flapping event for the episode, not a new DOWN event each time it drops
    phys = view.phys_text
    meaning = PHYS_MEANING.get(view.phys_state_id) if view.phys_state_id is not None else None
    if phys is None:
        why = "physical state unknown"
    elif meaning is None:
        why = f"physical state {phys}"
    else:
        why = f"physical state {phys}: {meaning}"
    because = f"policy {view.policy.name!r} expects it up" if view.policy is not None else "it has been ACTIVE before"
    return _finding(
        view,
        Kind.DOWN,
        CRITICAL,
        f"port down ({view.state_text}, {why})",
        state=view.state_text,
        phys_state=phys,
        expected_up_because=because,
    )


def _degraded(view: PortView, exp: Expectation) -> Finding | None:
    link, expected = usable(view.link), usable(exp.link)
    if link is None or expected is None:
        return None
    verdict = judge_link(link, expected)
    if verdict is None:
        return None
    # Below a policy or its own past: certain. Below only what its peers run: likely, not certain.
    best = usable(view.best_link)
    own = exp.origin in ("policy", "link") or (best is not None and judge_link(link, best) is not None)
    return _finding(
        view,
        Kind.DEGRADED,
        CRITICAL if own else WARNING,
        f"{verdict.message} — {exp.source}",
        link=link.link_name,
        link_gbps=link.gbps,
        expected=expected.link_name,
        expected_gbps=expected.gbps,
        downgrade=verdict.kind,
        source=exp.source,
        origin=exp.origin,
    )


# --- counters -----------------------------------------------------------------


def _symbol_errors(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    per_h = w.count("symbol_error", HOUR_S).total
    this_poll = known_delta(view.deltas.get("symbol_error"))
    interval = _seconds(view.interval_s)
    fast = this_poll is not None and 0 < interval <= t.fast_window_max_s and this_poll > t.symbol_errors_per_poll
    slow = per_h > t.symbol_errors_per_hour
    if not (fast or slow):
        return None
    parts = []
    if fast:
        parts.append(
            f"{this_poll} symbol errors in {_fmt_s(interval)} (over {t.symbol_errors_per_poll} per poll): "
            "the link is degrading fast"
        )
    if slow:
        parts.append(
            f"{_n(per_h)} symbol errors/h (over {t.symbol_errors_per_hour} symbol errors/h: "
            "bit error rate worse than 1e-12)"
        )
    # Symbol errors alone often need no action; with retrains or downs the link is failing.
    retrains = w.count("link_error_recovery", HOUR_S).total + w.count("link_downed", HOUR_S).total
    if retrains:
        also = f"the link also retrained or went down {_times(retrains)} in the last hour"
        advice = f"{also}: it is failing, replace the cable"
    else:
        advice = "check or reseat the cable"
    return _finding(
        view,
        Kind.SYMBOL_ERRORS,
        CRITICAL if retrains else WARNING,
        f"{'; '.join(parts)}; {advice}",
        symbol_errors_per_hour=round(per_h, 1),
        symbol_errors_this_poll=this_poll,
        retrains_last_hour=round(retrains, 1),
    )


def _flapping(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    if not _bounced_lately(w, t):
        return None
    downs = w.count("link_downed", HOUR_S).total
    retrains_h = w.count("link_error_recovery", HOUR_S).total
    retrains_min = w.count("link_error_recovery", MINUTE_S).total
    if downs > t.link_downed_per_hour or retrains_min > t.link_error_recovery_per_minute:
        severity = CRITICAL
    elif retrains_h > t.link_error_recovery_per_hour:
        severity = WARNING
    elif downs > 0 and view.is_active:
        # One bounce between polls is worth recording, not paging (a peer reboot does it).
        severity = INFO
    else:
        return None
    details = {
        "link_downs_per_hour": round(downs, 1),
        "link_error_recoveries_per_hour": round(retrains_h, 1),
        "link_error_recoveries_last_minute": round(retrains_min, 1),
    }
    if severity is INFO:
        text = f"link went down and came back {_times(downs)} in the last hour (link_downed)"
        return _finding(view, Kind.FLAPPING, INFO, text, **details)
    parts = []
    if downs:
        parts.append(f"{_n(downs)} link downs/h (link_downed)")
    if retrains_h:
        parts.append(f"{_n(retrains_h)} link error recoveries/h (link_error_recovery)")
    if retrains_min > t.link_error_recovery_per_minute:
        parts.append(f"{_n(retrains_min)} in the last minute (over {t.link_error_recovery_per_minute}/min)")
    now = ""
    if _down_while_flapping(view, w, t):
        now = f", down now ({view.state_text}, physical state {view.phys_text or 'unknown'})"
    text = f"link flapping{now}: {', '.join(parts)}; check the cable and the switch port"
    return _finding(view, Kind.FLAPPING, severity, text, **details)


def _counter(view: PortView, w: Windows, rule: CounterRule, t: Thresholds) -> Finding | None:
    limit = getattr(t, rule.threshold)
    per_h = w.count(rule.counter, HOUR_S).total
    if per_h <= limit:
        return None
    if rule.kind is Kind.XMIT_DISCARDS and w.count("link_downed", HOUR_S).total:
        return None  # a link going down discards what was queued; down and flapping say it already
    over = f"over {limit}/h" if limit else "any increase is serious"
    return _finding(
        view,
        rule.kind,
        rule.severity,
        f"{_n(per_h)} {rule.unit} ({rule.counter}, {over}): {rule.meaning}",
        counter=rule.counter,
        per_hour=round(per_h, 1),
        threshold_per_hour=limit,
    )


def _congestion(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    c: Count = w.count("port_xmit_wait", t.congestion_window_s)
    share = congested_share(c, t)
    if share is None:
        return None
    return _finding(
        view,
        Kind.CONGESTION,
        WARNING,
        f"congested: waiting for credits {share:.0%} of the last {_fmt_s(c.span_s)} "
        f"(port_xmit_wait, over {t.congestion_share:.0%}; {_g(t.xmit_wait_tick_ns)} ns per tick assumed)",
        wait_share=round(share, 3),
        window_s=round(c.span_s, 1),
        tick_ns=t.xmit_wait_tick_ns,
    )


def congested_share(c: Count, t: Thresholds) -> float | None:
    """The share of the window spent waiting for credits when it is over the threshold, else None."""
    if c.span_s <= 0 or c.total <= 0:
        return None
    share = min(c.total * t.xmit_wait_tick_ns * 1e-9 / c.span_s, 1.0)
    return share if share > t.congestion_share else None


def _capped(view: PortView) -> Finding | None:
    if not view.capped:
        return None
    names = sorted(str(n) for n in view.capped)
    return _finding(
        view,
        Kind.CAPPED,
        INFO,
        f"counters stuck at their maximum ({', '.join(names)}): their rates are unknown; "
        "reset the counter (perfquery -R) or use extended counters (64-bit PMA)",
        capped=names,
    )


# --- PCIe ---------------------------------------------------------------------


def _pcie(view: PortView, exp: Expectation) -> Finding | None:
    p = view.pcie
    if p is None:
        return None
    now_bw = pcie.usable_gbps(p.current_gts, p.current_width)
    if now_bw is None:
        return None
    now_text = pcie.describe(p.current_gts, p.current_width)
    max_gen, now_gen = pcie.generation(p.max_gts), pcie.generation(p.current_gts)
    slow_gen = max_gen is not None and now_gen is not None and now_gen < max_gen
    narrow = _positive(p.max_width) and _positive(p.current_width) and p.current_width < p.max_width
    trained_low = slow_gen or narrow
    port_rate = _port_needs(view, exp)
    bottleneck = port_rate is not None and now_bw < port_rate.gbps

    if not (trained_low or bottleneck):
        return None
    parts = []
    if bottleneck:
        parts.append(f"PCIe {now_text} (~{round(now_bw):,} Gb/s) limits a {port_rate.describe()} port")
    if trained_low:
        max_text = pcie.describe(p.max_gts if max_gen else p.current_gts, p.max_width if narrow else p.current_width)
        parts.append(f"PCIe trained at {now_text}, the card supports {max_text}")
        advice = "reseat the card and check the slot"
    else:
        advice = "the card itself is at its PCIe maximum"
    # Fixable (or maybe fixable) and costing bandwidth: warning. Either alone is worth knowing, not paging.
    max_known = max_gen is not None and _positive(p.max_width)
    severity = WARNING if bottleneck and (trained_low or not max_known) else INFO
    return Finding(
        Kind.PCIE,
        severity,
        device_key(Kind.PCIE, view.node, view.device),
        f"{view.node} {view.device}: {'; '.join(parts)} ({advice})",
        {
            "pcie": now_text,
            "pcie_gbps": round(now_bw, 1),
            "port_gbps": port_rate.gbps if port_rate else None,
            "trained_low": trained_low,
            "bottleneck": bottleneck,
        },
    )


def _port_needs(view: PortView, exp: Expectation) -> Rate | None:
    """The fastest link this port runs at or should: what its PCIe link must carry."""
    candidates = []
    if view.is_active and usable(view.link) is not None:
        candidates.append(usable(view.link))
    if _expect_up(view) or view.is_active:
        expected = usable(exp.link)
        if expected is not None:
            candidates.append(expected)
    return max(candidates, key=lambda r: r.gbps) if candidates else None


# --- vanished -----------------------------------------------------------------


def _vanished(view: PortView, t: Thresholds, device: bool) -> list[Finding]:
    polls = view.device_missing_polls if device else view.port_missing_polls
    if polls < t.vanished_after_polls:
        return []
    severity = CRITICAL if _expect_up(view) else INFO
    missing = "the last snapshot" if polls == 1 else f"the last {polls} snapshots"
    if device:
        key = device_key(Kind.VANISHED, view.node, view.device)
        text = (
            f"{view.node} {view.device}: device vanished, missing from {missing} "
            "(the HCA fell off the PCIe bus or its driver was unloaded)"
        )
    else:
        key = port_key(Kind.VANISHED, view.node, view.device, view.port)
        text = f"{port_label(view.node, view.device, view.port)}: port vanished, missing from {missing}"
    return [Finding(Kind.VANISHED, severity, key, text, {"missing_polls": polls})]


# --- words and numbers --------------------------------------------------------


def _seconds(x: object) -> float:
    return float(x) if _positive(x) else 0.0


def _positive(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and x == x and 0 < x < float("inf")


def _n(x: float) -> str:
    """A count or rate for a message: whole when it is (nearly) whole, thousands separated."""
    return f"{round(x):,}" if abs(x - round(x)) < 0.05 else f"{x:,.1f}"


def _g(x: float) -> str:
    return f"{x:g}"


def _times(x: float) -> str:
    n = round(x)
    return "once" if n <= 1 else f"{n:,} times"


def _fmt_s(seconds: float) -> str:
    seconds = _seconds(seconds)
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.2g} s"
