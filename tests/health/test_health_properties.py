"""Covers fabricweb/health/rules/expectation.py, fabricweb/health/rules/findings.py,
fabricweb/health/records/lifecycle.py, fabricweb/health/rules/.

Arbitrary inputs never make the rules raise, and the judgement layer stays free of Django."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricweb.health.records.lifecycle import OpenEvent, step
from fabricweb.health.rules import judge_node, judge_port, judge_ports
from fabricweb.health.rules.expectation import fabric_majority
from fabricweb.health.rules.findings import Severity
from tests.health.health_support import links, port_views


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
    pure = ["records/lifecycle", "../thresholds"]
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
