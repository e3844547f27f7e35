"""The table docs/metrics.md carries (`markdown`), and the health thresholds no rule follows, with why."""

from __future__ import annotations

from fabricweb.thresholds import DEFAULT, Thresholds

from .model import flat
from .quantities import DEFAULT_POLL_INTERVAL_S, PLACEHOLDER, number, quantities
from .render import alerts

# Health thresholds no rule's number follows, and why. Every field of Thresholds is mirrored by a rule,
# applied by the exporter to a series a rule reads, or here (the test checks all three together).
HEALTH_ONLY = {
    "fast_window_max_s": "a guard on one poll's count after missed polls; a rate over a minute needs none",
    "link_error_recovery_per_hour": "health's warning-level flapping (retraining); "
    '`infiniband_events_open{kind="flapping"}` has it',
    "local_link_integrity_errors_per_hour": "health's event only (critical); "
    '`infiniband_events_open{kind="link_integrity_errors"}` has it',
    "buffer_overrun_errors_per_hour": "health's event only (critical); "
    '`infiniband_events_open{kind="buffer_overrun_errors"}` has it',
    "clock_skew_s": "a node's clock against the server's: not in /metrics",
    "vanished_after_polls": "health's event; a vanished port is `infiniband_port_up` 0 (InfinibandPortDown)",
    "resolve_after_polls": "health's hysteresis; an alert resolves when its expression stops matching",
}


def markdown(t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> str:
    """The table docs/metrics.md carries: each alert, the numbers it shares with health, the threshold they
    come from and the health finding it says."""
    q = quantities(t, poll_s)
    rows = [
        "| alert | severity | the rule's numbers | health threshold (default) | health finding |",
        "|---|---|---|---|---|",
    ]
    for name, rule in alerts().items():
        used = dict.fromkeys(PLACEHOLDER.findall(flat(rule.expr) + " " + (rule.pending or "")))
        numbers = [f"{'`for:` ' if f'<<{p}>>' == rule.pending else ''}{q[p].text} ({q[p].meaning})" for p in used]
        mirrored = [f"`{f}` ({number(getattr(t, f))})" for f in rule.mirrors]
        mirrored += [f"`{f}` ({number(getattr(t, f))}), by the exporter" for f in rule.exporter_applies]
        rows.append(
            f"| {name} | {rule.severity} | {'; '.join(numbers) or '-'} | {', '.join(mirrored) or '-'} | {rule.health} |"
        )
    rows += ["", "Health thresholds no rule follows, and why:", ""]
    rows += [f"- `{name}`: {why}." for name, why in HEALTH_ONLY.items()]
    return "\n".join(rows) + "\n"
