"""The shipped Prometheus rules (deploy/prometheus/rules/), generated from the health thresholds.

Every number an alert shares with the health rules (fabricweb/thresholds.py) is written here
once, as a quantity worked out from the thresholds in the unit Prometheus sees, and put into the
rules through a `<<name>>` placeholder. The committed files are this module's output:

    .venv/bin/python -m fabricweb.exporter.prometheus_rules --write deploy/prometheus/rules

tests/deploy/test_prometheus_rules.py fails when they differ, and `drift()` names each rule whose
number is not what the threshold it mirrors says (a hand edit of the YAML, or a threshold changed
without regenerating). A site that overrides FABRIC_THRESHOLDS or FABRIC_POLL_INTERVAL makes its
own rules the same way:

    python -m fabricweb.exporter.prometheus_rules --poll-interval 5 \\
        --thresholds '{"symbol_errors_per_hour": 240}' --write /etc/prometheus/rules

Health judges a port per poll; Prometheus sees the counters a scrape at a time (every 30 s in the
shipped config). Where health counts per poll, the rule compares the rate that threshold means at the
poll interval (symbol_errors_per_poll / FABRIC_POLL_INTERVAL per second): the same line for errors
that go on, which is what a page is for; a single bad poll is health's event alone. Per-hour and
per-minute thresholds are `increase()` over the same hour or minute. docs/metrics.md lists which rule
mirrors which threshold (`markdown()`, checked by the same test).

Pure: the thresholds module and PyYAML only, no Django.

A module per concern: the quantities (quantities.py), the shape of a rule (model.py), the rules themselves
(recording.py, port_alerts.py, fabric_alerts.py), the files' text (render.py), drift (drift.py) and the
docs table (docs.py); this package's names are the builder's, and `main` its command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from fabricweb.thresholds import Thresholds

from .docs import HEALTH_ONLY, markdown
from .drift import drift, loaded
from .model import Alert, Group, Record
from .quantities import DEFAULT_POLL_INTERVAL_S, MIN_PENDING_S, Quantity, quantities
from .recording import RECORDING
from .render import ALERTS, ALERTS_FILE, RECORDING_FILE, alerts, build, render, rules

__all__ = [
    "ALERTS",
    "ALERTS_FILE",
    "DEFAULT_POLL_INTERVAL_S",
    "HEALTH_ONLY",
    "MIN_PENDING_S",
    "RECORDING",
    "RECORDING_FILE",
    "Alert",
    "Group",
    "Quantity",
    "Record",
    "alerts",
    "build",
    "drift",
    "loaded",
    "main",
    "markdown",
    "quantities",
    "render",
    "rules",
]


def main(argv: list[str] | None = None, out: Callable[[str], object] = sys.stdout.write) -> int:
    p = argparse.ArgumentParser(
        prog="python -m fabricweb.exporter.prometheus_rules",
        description="Write the Prometheus rule files from the health thresholds (the defaults: the shipped files).",
    )
    p.add_argument("--write", metavar="DIR", type=Path, help="write both files into DIR (default: print them)")
    p.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL_S, metavar="S",
                   help="FABRIC_POLL_INTERVAL in seconds (default: %(default)g)")  # fmt: skip
    p.add_argument("--thresholds", default="{}", metavar="JSON",
                   help="FABRIC_THRESHOLDS, a JSON object of overrides (default: none)")  # fmt: skip
    p.add_argument("--markdown", action="store_true", help="print the docs table of rules and thresholds instead")
    args = p.parse_args(argv)
    try:
        overrides = json.loads(args.thresholds)
        if not isinstance(overrides, dict):
            raise ValueError("--thresholds: a JSON object")
        t = Thresholds.from_mapping(overrides)
        files = build(t, args.poll_interval)
    except ValueError as e:
        p.error(str(e))
    if args.markdown:
        out(markdown(t, args.poll_interval))
    elif args.write:
        for name, text in files.items():
            (args.write / name).write_text(text)
    else:
        out("".join(f"# --- {name}\n{text}" for name, text in files.items()))
    return 0
