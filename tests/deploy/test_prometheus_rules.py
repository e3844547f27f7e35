"""The shipped Prometheus config and rules: promtool finds them clean, and every alert has a unit test
(deploy/prometheus/tests) in which it fires."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from exported_names import exported, grouping_labels, recorded, selectors

from fabricweb.health.thresholds import DEFAULT

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.test.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    assert binary, "promtool is not installed (scripts/system-packages installs Debian's prometheus)"
    return subprocess.run([binary, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60)


def alert_rules() -> dict[str, dict]:
    return {
        rule["alert"]: rule
        for path in RULES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


def alert_names() -> set[str]:
    return set(alert_rules())


def test_promtool_finds_the_rules_clean():
    result = promtool("check", "rules", *map(str, RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_promtool_finds_the_scrape_config_valid():
    result = promtool("check", "config", "--syntax-only", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_rule_passes_its_unit_tests():
    result = promtool("test", "rules", *map(str, UNIT_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_rule_has_a_unit_test_in_which_it_fires():
    fired = {
        case["alertname"]
        for path in UNIT_TESTS
        for test in yaml.safe_load(path.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert alert_names() - fired == set()


def test_the_faults_operators_page_on_each_have_an_alert():
    assert alert_names() >= {
        "InfinibandPortDown",
        "InfinibandPortDegraded",
        "InfinibandSymbolErrors",
        "InfinibandSymbolErrorsFast",
        "InfinibandPortFlapping",
        "InfinibandReceiveErrors",
        "InfinibandRemotePhysicalErrors",
        "InfinibandTransmitDiscards",
        "InfinibandCongestion",
        "InfinibandPcieBottleneck",
        "InfinibandNoSubnetManager",
        "InfinibandNodeStale",
        "InfinibandCounterCapped",
        "FabricwebExporterDown",
        "FabricwebIngestStalled",
        # The switch side.
        "InfinibandSwitchPortDown",
        "InfinibandLinkDegraded",
        "InfinibandSwitchPortSymbolErrors",
        "InfinibandSwitchPortSymbolErrorsFast",
        "InfinibandSwitchUnreachable",
        "InfinibandFabricCollectorStale",
    }


def threshold(expr: str) -> float:
    (number,) = re.findall(r">\s*([0-9.]+)\s*$", expr.strip())
    return float(number)


def test_the_switch_rules_say_what_the_health_thresholds_say():
    rules = alert_rules()
    # Symbol errors: the thresholds' per hour, and per poll at the default poll interval (per second here).
    assert "[1h]" in rules["InfinibandSwitchPortSymbolErrors"]["expr"]
    assert threshold(rules["InfinibandSwitchPortSymbolErrors"]["expr"]) == DEFAULT.symbol_errors_per_hour
    assert threshold(rules["InfinibandSymbolErrors"]["expr"]) == DEFAULT.symbol_errors_per_hour
    fast = rules["InfinibandSwitchPortSymbolErrorsFast"]["expr"]
    assert fast.startswith("rate(")
    assert threshold(fast) == DEFAULT.symbol_errors_per_poll / settings.FABRIC_POLL_INTERVAL
    # A switch port down is said after one poll (down_after_polls): the alert waits one minute, as the host's.
    assert DEFAULT.down_after_polls == 1
    assert rules["InfinibandSwitchPortDown"]["for"] == rules["InfinibandPortDown"]["for"]
    # Degraded and unreachable are critical findings, as the health rules open them (degraded against what
    # both ends support: the expectation's origin "link", critical).
    for name in ("InfinibandSwitchPortDown", "InfinibandLinkDegraded", "InfinibandSwitchUnreachable"):
        assert rules[name]["labels"]["severity"] == "critical", name


@pytest.fixture
def names(db):
    """What /metrics exports (a fabric with switches, every set) and the recording rules."""
    found = exported()
    return {**found, **recorded(found)}


def test_every_rule_reads_series_and_labels_the_exporter_has(names):
    rules = [
        (rule.get("alert") or rule["record"], rule["expr"])
        for path in RULES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]
    for title, expr in rules:
        read = [(name, labels) for name, labels in selectors(expr) if name != "up"]  # Prometheus' own
        for name, labels in read:
            assert name in names, f"{title}: {name} is neither exported nor recorded"
            assert labels <= names[name], f"{title}: {name} has no label {labels - names[name]}"
        known = set().union(*(names[name] for name, _ in read)) | {"job"}
        # label_replace's new label counts as known.
        known |= set(re.findall(r'label_replace\([^,]+,\s*"(\w+)"', expr))
        assert grouping_labels(expr) <= known, f"{title}: no series of it has {grouping_labels(expr) - known}"
