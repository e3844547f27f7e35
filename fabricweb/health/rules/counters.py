"""The error and wait counters: symbol errors, the per-hour counter rules, congestion, capped counters."""

from __future__ import annotations

from dataclasses import dataclass

from collectors.link import Rate
from collectors.xmitwait import congestion_ratio, xmit_wait_unit
from fabricweb.thresholds import Thresholds

from .common import CRITICAL, INFO, WARNING, fmt_n, fmt_s, fmt_times, port_finding, seconds
from .findings import Finding, Kind, Severity
from .view import PortView
from .window import HOUR_S, Count, Windows, known_delta


@dataclass(frozen=True, slots=True)
class CounterRule:
    """A counter whose count over the last hour is judged against one threshold. Messages say "in the last hour",
    not "/h": the port page's chart draws errors/h as a rate per sample, the rule counts the sliding hour."""

    kind: Kind
    counter: str
    threshold: str  # Thresholds field name
    severity: Severity
    unit: str  # what is counted: the message says how many in the last hour
    meaning: str


COUNTER_RULES = (
    CounterRule(
        Kind.RCV_ERRORS,
        "port_rcv_errors",
        "port_rcv_errors_per_hour",
        WARNING,
        "receive errors",
        "malformed packets arrive on this link; check the cable",
    ),
    CounterRule(
        Kind.REMOTE_PHYSICAL_ERRORS,
        "port_rcv_remote_physical_errors",
        "remote_physical_errors_per_hour",
        INFO,  # not this port's fault, and every port behind the bad link sees it
        "remote physical errors",
        "packets arrive already marked bad: the fault is upstream, elsewhere in the fabric",
    ),
    CounterRule(
        Kind.XMIT_DISCARDS,
        "port_xmit_discards",
        "xmit_discards_per_hour",
        WARNING,
        "transmit discards",
        "packets dropped on send: congestion, or a peer that stopped taking data",
    ),
    CounterRule(
        Kind.LINK_INTEGRITY,
        "local_link_integrity_errors",
        "local_link_integrity_errors_per_hour",
        CRITICAL,
        "link integrity errors",
        "the link's physical errors went over the port's limit; check or replace the cable",
    ),
    CounterRule(
        Kind.BUFFER_OVERRUN,
        "excessive_buffer_overrun_errors",
        "buffer_overrun_errors_per_hour",
        CRITICAL,
        "buffer overrun errors",
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


def symbol_errors(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    per_h = w.count("symbol_error", HOUR_S).total
    this_poll = known_delta(view.deltas.get("symbol_error"))
    interval = seconds(view.interval_s)
    fast = this_poll is not None and 0 < interval <= t.fast_window_max_s and this_poll > t.symbol_errors_per_poll
    slow = per_h > t.symbol_errors_per_hour
    if not (fast or slow):
        return None
    parts = []
    if fast:
        parts.append(
            f"{this_poll} symbol errors in {fmt_s(interval)} (over {t.symbol_errors_per_poll} per poll): "
            "the link is degrading fast"
        )
    if slow:
        parts.append(
            f"{fmt_n(per_h)} symbol errors in the last hour (over {t.symbol_errors_per_hour} in an hour: "
            "bit error rate worse than 1e-12)"
        )
    # Symbol errors alone often need no action; with retrains or downs the link is failing.
    retrains = w.count("link_error_recovery", HOUR_S).total + w.count("link_downed", HOUR_S).total
    if retrains:
        also = f"the link also retrained or went down {fmt_times(retrains)} in the last hour"
        advice = f"{also}: it is failing, replace the cable"
    else:
        advice = "check or reseat the cable"
    return port_finding(
        view,
        Kind.SYMBOL_ERRORS,
        CRITICAL if retrains else WARNING,
        f"{'; '.join(parts)}; {advice}",
        symbol_errors_per_hour=round(per_h, 1),
        symbol_errors_this_poll=this_poll,
        retrains_last_hour=round(retrains, 1),
    )


def counter(view: PortView, w: Windows, rule: CounterRule, t: Thresholds) -> Finding | None:
    limit = getattr(t, rule.threshold)
    per_h = w.count(rule.counter, HOUR_S).total
    if per_h <= limit:
        return None
    if rule.kind is Kind.XMIT_DISCARDS and w.count("link_downed", HOUR_S).total:
        return None  # a link going down discards what was queued; down and flapping say it already
    over = f"over {limit} in an hour" if limit else "any increase is serious"
    return port_finding(
        view,
        rule.kind,
        rule.severity,
        f"{fmt_n(per_h)} {rule.unit} in the last hour ({rule.counter}, {over}): {rule.meaning}",
        counter=rule.counter,
        per_hour=round(per_h, 1),
        threshold_per_hour=limit,
    )


def congestion(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    c: Count = w.count("port_xmit_wait", t.congestion_window_s)
    share = congested_share(c, view.device_id, view.link, t)
    if share is None:
        return None
    unit = xmit_wait_unit(view.device_id)
    # Above the whole link the count and the unit disagree: said, not capped (collectors.xmitwait.lost_share).
    unlikely = "; more than the link's whole time: this device's bytes per count are not these" if share > 1 else ""
    return port_finding(
        view,
        Kind.CONGESTION,
        WARNING,
        f"congested: {share:.0%} of the link's time lost waiting for credits in the last {fmt_s(c.span_s)} "
        f"(port_xmit_wait at {unit.short()}, over {t.congestion_share:.0%}){unlikely}",
        lost_share=round(share, 3),
        window_s=round(c.span_s, 1),
        bytes_per_count=unit.bytes_per_count,
        per_lane=unit.per_lane,
        unit_assumed=unit.assumed,
    )


def congested_share(c: Count, device: int | None, link: Rate | None, t: Thresholds) -> float | None:
    """The share of link time the window lost to congestion (collectors.xmitwait.congestion_ratio) when it is over
    the threshold, else None."""
    if c.span_s <= 0 or c.total <= 0:
        return None
    share = congestion_ratio(c.total, device, link, c.span_s)
    return share if share is not None and share > t.congestion_share else None


def capped(view: PortView) -> Finding | None:
    if not view.capped:
        return None
    names = sorted(str(n) for n in view.capped)
    return port_finding(
        view,
        Kind.CAPPED,
        INFO,
        f"counters stuck at their maximum ({', '.join(names)}): their rates are unknown; "
        "reset the counter (perfquery -R) or use extended counters (64-bit PMA)",
        capped=names,
    )
