"""The shipped Prometheus config and rules: promtool finds them clean, and every alert has a unit test
(deploy/prometheus/tests) in which it fires."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.test.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    assert binary, "promtool is not installed (scripts/system-packages installs Debian's prometheus)"
    return subprocess.run([binary, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60)


def alert_names() -> set[str]:
    return {
        rule["alert"]
        for path in RULES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


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
    }
