"""Covers fabricweb/exporter/prometheus_rules/, fabricweb/health/rules/, fabricweb/thresholds.py; through them
fabricweb/exporter/prometheus_rules/docs.py, fabricweb/exporter/prometheus_rules/drift.py,
fabricweb/exporter/prometheus_rules/fabric_alerts.py, fabricweb/exporter/prometheus_rules/model.py,
fabricweb/exporter/prometheus_rules/port_alerts.py, fabricweb/exporter/prometheus_rules/quantities.py,
fabricweb/exporter/prometheus_rules/recording.py, fabricweb/exporter/prometheus_rules/render.py.

The shipped Prometheus config and rules: promtool finds them clean, every alert has a unit test
(deploy/prometheus/tests) in which it fires, and the rules are what fabricweb/exporter/prometheus_rules/
makes of the health thresholds: a rule's number and the threshold it mirrors cannot drift apart."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from fabricweb.exporter import prometheus_rules as builder
from fabricweb.health.rules import COUNTER_RULES
from fabricweb.thresholds import DEFAULT, Thresholds
from tests.deploy.exported_names import exported, grouping_labels, recorded, selectors

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.test.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    assert binary, "promtool is not installed (scripts/system-packages installs Debian's prometheus)"
    return subprocess.run([binary, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60)


def alert_rules(paths: list[Path] = RULES) -> dict[str, dict]:
    return {
        rule["alert"]: rule
        for path in paths
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
        "FabricwebBrokerMemoryHigh",
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
    for name in ("InfinibandSwitchPortSymbolErrorsFast", "InfinibandSymbolErrorsFast"):
        fast = rules[name]["expr"]
        assert fast.startswith("rate(")
        assert threshold(fast) == DEFAULT.symbol_errors_per_poll / settings.FABRIC_POLL_INTERVAL, name
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


# --- the rules against the health thresholds (fabricweb/exporter/prometheus_rules/) ----------------

REGENERATE = "run: .venv/bin/python -m fabricweb.exporter.prometheus_rules --write deploy/prometheus/rules"


def test_the_committed_rules_are_what_the_builder_makes():
    built = builder.build()
    assert sorted(built) == [p.name for p in RULES]
    for path in RULES:
        assert path.read_text() == built[path.name], f"{path.name} is not the builder's: {REGENERATE}"


def test_the_builder_assumes_the_default_poll_interval():
    assert settings.FABRIC_POLL_INTERVAL == builder.DEFAULT_POLL_INTERVAL_S


def shipped(paths: list[Path] = RULES) -> dict[str, dict]:
    return builder.loaded(path.read_text() for path in paths)


def test_every_rule_number_is_the_health_threshold_it_mirrors():
    # Fails on a hand edit of the YAML too, saying what the threshold says instead.
    assert builder.drift(shipped(), DEFAULT, builder.DEFAULT_POLL_INTERVAL_S) == []


def mirrored() -> dict[str, set[str]]:
    """Threshold name -> the rules whose numbers follow it."""
    out: dict[str, set[str]] = {}
    for name, rule in builder.rules().items():
        for threshold_name in rule.mirrors:
            out.setdefault(threshold_name, set()).add(name)
    return out


def moved(name: str) -> float:
    """Another value of a threshold, far enough to show (a `for:` is at least a minute)."""
    value = getattr(DEFAULT, name)
    if name == "congestion_share":
        return value / 2
    return value * 10 + 1 if isinstance(value, int) else value / 2


@pytest.mark.parametrize("name", sorted(mirrored()))
def test_a_threshold_that_moves_without_its_rules_is_a_failure(name):
    changed = Thresholds.from_mapping({name: moved(name)})
    problems = builder.drift(shipped(), changed)
    assert {p.split(": ")[0] for p in problems} == mirrored()[name]
    assert all(name in p for p in problems), problems
    # ... until the rules are made again from it.
    assert builder.drift(builder.loaded(builder.build(changed).values()), changed) == []


def test_a_rule_that_moves_without_its_threshold_is_a_failure():
    rules = shipped()
    # The drift this check was written for: "more than 10 symbol errors per second" against health's 10 per (10 s) poll.
    fast = rules["InfinibandSymbolErrorsFast"]
    rules["InfinibandSymbolErrorsFast"] = {**fast, "expr": "rate(infiniband_symbol_error_total[1m]) > 10"}
    hourly = rules["InfinibandSwitchPortSymbolErrors"]
    rules["InfinibandSwitchPortSymbolErrors"] = {
        **hourly,
        "expr": "increase(infiniband_switch_port_symbol_error_total[1h]) > 240",
    }
    flapping = rules["InfinibandPortFlapping"]
    rules["InfinibandPortFlapping"] = {**flapping, "expr": "increase(infiniband_link_downed_total[1h]) >= 2"}
    congestion = rules["InfinibandCongestion"]
    rules["InfinibandCongestion"] = {**congestion, "expr": "infiniband:port_xmit_wait:ratio1m > 0.25"}
    assert builder.drift(rules) == [
        "InfinibandSymbolErrorsFast: expr says 10 where the health thresholds say 1"
        " (symbol errors/s: 10 per poll at the 10 s poll interval; symbol_errors_per_poll = 10)",
        "InfinibandPortFlapping: expr is not the builder's ('increase(infiniband_link_downed_total[1h]) >= 2')",
        "InfinibandCongestion: expr says 0.25 where the health thresholds say 0.05"
        " (share of link time lost; congestion_share = 0.05)",
        "InfinibandSwitchPortSymbolErrors: expr says 240 where the health thresholds say 120"
        " (symbol errors/h; symbol_errors_per_hour = 120)",
    ]
    assert builder.drift(shipped()) == []


def test_every_health_threshold_is_mirrored_or_said_why_not():
    exporter = {name for alert in builder.alerts().values() for name in alert.exporter_applies}
    names = {name for name, *_ in Thresholds.describe()}
    assert set(mirrored()) | exporter | set(builder.HEALTH_ONLY) == names
    assert set(builder.HEALTH_ONLY).isdisjoint(set(mirrored()) | exporter)


def test_the_counter_alerts_have_the_health_counter_rules_severity():
    alerts = builder.alerts()
    for rule in COUNTER_RULES:
        for name in mirrored().get(rule.threshold, ()):
            assert alerts[name].severity == rule.severity.value, name


def test_the_docs_say_which_rule_mirrors_which_threshold():
    docs = (PROMETHEUS.parents[1] / "docs" / "metrics.md").read_text()
    assert builder.markdown() in docs, (
        "docs/metrics.md: paste `python -m fabricweb.exporter.prometheus_rules --markdown`"
    )


def test_a_site_makes_its_rules_from_its_own_settings(tmp_path):
    argv = ["--write", str(tmp_path), "--poll-interval", "5", "--thresholds", '{"symbol_errors_per_hour": 240}']
    assert builder.main(argv) == 0
    written = sorted(tmp_path.glob("*.yml"))
    assert [p.name for p in written] == [p.name for p in RULES]
    rules = shipped(written)
    assert threshold(rules["InfinibandSymbolErrors"]["expr"]) == 240
    assert threshold(rules["InfinibandSymbolErrorsFast"]["expr"]) == 2  # 10 per 5 s poll
    site = Thresholds.from_mapping({"symbol_errors_per_hour": 240})
    assert builder.drift(rules, site, 5.0) == []
    assert builder.drift(rules) != []  # not the defaults
    assert "FABRIC_POLL_INTERVAL=5" in written[0].read_text()
    result = promtool("check", "rules", *map(str, written))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_builder_rejects_a_bad_setting(capsys):
    with pytest.raises(SystemExit):
        builder.main(["--thresholds", '{"symbol_errors_per_day": 1}'])
    assert "unknown health threshold" in capsys.readouterr().err
