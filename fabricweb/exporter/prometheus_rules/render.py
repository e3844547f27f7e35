"""The rule files' text: every rule written as the hand-written files were, its placeholders filled with
the quantities of these thresholds at this poll interval (`build`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import fields

from fabricweb.thresholds import DEFAULT, Thresholds

from .fabric_alerts import EXPORTER, NODES, SWITCHES
from .model import Alert, Folded, Group, Record, Text
from .port_alerts import DEVICES, PORTS
from .quantities import DEFAULT_POLL_INTERVAL_S, PLACEHOLDER, Quantity, number, quantities
from .recording import RECORDING

RECORDING_FILE = "fabricweb-recording.yml"
ALERTS_FILE = "fabricweb-alerts.yml"

ALERTS = (PORTS, DEVICES, SWITCHES, NODES, EXPORTER)

HEADERS = {
    RECORDING_FILE: (
        "Recording rules for the Grafana dashboard (deploy/grafana) and the alerts: rates over the",
        "raw counters, computed once per evaluation instead of once per panel refresh.",
    ),
    ALERTS_FILE: (
        "Alert rules over fabricweb's /metrics (docs/metrics.md). Thresholds follow",
        "docs/infiniband.md §4 (NVIDIA NIC health, infiniband-diags) through fabricweb's own",
        "health thresholds (fabricweb/thresholds.py); severity as in fabricweb's events:",
        "critical pages someone, warning is for today, info is on the record.",
        "Unit tests: deploy/prometheus/tests/ (`promtool test rules`, run by the test suite).",
    ),
}
GENERATED = (
    "Generated from the health thresholds (<<thresholds_note>>) by fabricweb/exporter/prometheus_rules/:",
    "edit that and run `.venv/bin/python -m fabricweb.exporter.prometheus_rules --write deploy/prometheus/rules`.",
)


def fill(text: str, q: dict[str, Quantity]) -> str:
    def one(m: re.Match) -> str:
        if m[1] not in q:
            raise KeyError(f"no quantity <<{m[1]}>>")
        return q[m[1]].text

    return PLACEHOLDER.sub(one, text)


def _scalar(key: str, value: Text, indent: int, q: dict[str, Quantity]) -> list[str]:
    pad = " " * indent
    if isinstance(value, Folded):
        head = f"{pad}{key}: {'>-' if value.strip else '>'}"
        return [head, *(f"{pad}  {fill(line, q)}" for line in value.lines)]
    text = fill(value, q)
    if text.startswith('"'):  # written quoted, as YAML double-quoted (the same escapes as JSON's)
        return [f"{pad}{key}: {text}"]
    return [f"{pad}{key}: {_plain_or_quoted(text)}"]


def _plain_or_quoted(text: str) -> str:
    import yaml

    try:
        if yaml.safe_load(f"k: {text}") == {"k": text}:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


def _comment(lines: Iterable[str], indent: int, q: dict[str, Quantity]) -> list[str]:
    return [f"{' ' * indent}# {fill(line, q)}".rstrip() for line in lines]


def _rule(rule: Alert | Record, q: dict[str, Quantity]) -> list[str]:
    out = _comment(rule.comment, 6, q)
    if isinstance(rule, Record):
        out.append(f"      - record: {rule.name}")
        out += _scalar("expr", rule.expr, 8, q)
        return out
    out.append(f"      - alert: {rule.name}")
    out += _scalar("expr", rule.expr, 8, q)
    if rule.pending:
        out.append(f"        for: {fill(rule.pending, q)}")
    out.append("        labels:")
    out += [f"          {k}: {v}" for k, v in (("severity", rule.severity), *rule.extra_labels)]
    out.append("        annotations:")
    out += _scalar("summary", rule.summary, 10, q)
    out += _scalar("description", rule.description, 10, q)
    return out


def render(groups: tuple[Group, ...], header: tuple[str, ...], q: dict[str, Quantity], note: str) -> str:
    out = _comment(header, 0, q)
    out += [f"# {line.replace('<<thresholds_note>>', note)}" for line in GENERATED]
    out.append("groups:")
    for i, group in enumerate(groups):
        if i:
            out.append("")
        out += _comment(group.comment, 2, q)
        out += [f"  - name: {group.name}", "    rules:"]
        alerts = any(isinstance(r, Alert) for r in group.rules)
        for j, rule in enumerate(group.rules):
            if j and alerts:
                out.append("")  # alerts are spaced out, recording rules are not
            out += _rule(rule, q)
    return "\n".join(out) + "\n"


def build(t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> dict[str, str]:
    """File name -> the rule file's text, for these thresholds at this poll interval."""
    q = quantities(t, poll_s)
    note = _settings_note(t, poll_s)
    return {
        RECORDING_FILE: render(RECORDING, HEADERS[RECORDING_FILE], q, note),
        ALERTS_FILE: render(ALERTS, HEADERS[ALERTS_FILE], q, note),
    }


def _settings_note(t: Thresholds, poll_s: float) -> str:
    """What the file was made from, when not the defaults."""
    changed = {f.name: getattr(t, f.name) for f in fields(t) if getattr(t, f.name) != getattr(DEFAULT, f.name)}
    parts = [f"FABRIC_THRESHOLDS='{json.dumps(changed, sort_keys=True)}'"] if changed else []
    if poll_s != DEFAULT_POLL_INTERVAL_S:
        parts.append(f"FABRIC_POLL_INTERVAL={number(poll_s)}")
    return ", ".join(parts) or "the defaults"


def alerts() -> dict[str, Alert]:
    return {rule.name: rule for group in ALERTS for rule in group.rules if isinstance(rule, Alert)}


def rules() -> dict[str, Alert | Record]:
    """Every rule, recording and alerting, by name."""
    return {rule.name: rule for group in (*RECORDING, *ALERTS) for rule in group.rules}
