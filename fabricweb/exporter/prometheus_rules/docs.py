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
    # A RoCE port's lossless Ethernet (health/rules/lossless.py): judged per poll on counters /metrics has only
    # in ?set=hw (infiniband_port_hw_stat), so the events say it.
    "pfc_pause_share": 'RoCE lossless rule; `infiniband_events_open{kind="pfc_pause_received"}` and '
    '`{kind="pfc_pause_sent"}` have it',
    "pause_storm_events": 'RoCE lossless rule; `infiniband_events_open{kind="pause_storm"}` has it',
    "cnp_per_s": 'RoCE lossless rule; `infiniband_events_open{kind="cnp_storm"}` has it',
    "out_of_sequence_per_s": 'RoCE lossless rule; `infiniband_events_open{kind="roce_packet_loss"}` has it',
    "packet_seq_err_per_s": 'RoCE lossless rule; `infiniband_events_open{kind="roce_packet_loss"}` has it',
    "local_ack_timeout_per_s": 'RoCE lossless rule; `infiniband_events_open{kind="roce_packet_loss"}` has it',
    "rx_discards_phy_per_s": 'RoCE lossless rule; `infiniband_events_open{kind="rx_discards"}` has it',
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
