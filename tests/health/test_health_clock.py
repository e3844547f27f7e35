"""Covers fabricweb/health/rules/findings.py, fabricweb/health/rules/, fabricweb/thresholds.py; through them
fabricweb/health/rules/common.py, fabricweb/health/rules/counters.py, fabricweb/health/rules/link.py,
fabricweb/health/rules/node.py, fabricweb/health/rules/pcie.py, fabricweb/health/rules/port.py.

A node's clock off by minutes is flagged (info), in whole minutes, ahead and behind told apart."""

from __future__ import annotations

import pytest

from fabricweb.health.rules import judge_clock
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.thresholds import Thresholds


@pytest.mark.parametrize("skew", [0.0, 1.5, -30.0, 119.0, -119.9, float("nan")])
def test_a_clock_within_two_minutes_is_not_flagged(skew):
    assert judge_clock("cn042", skew) == []


def test_it_flags_a_clock_five_minutes_ahead_as_the_nodes_clock():
    [finding] = judge_clock("cn042", 301.0)
    assert (finding.kind, finding.severity, finding.key) == (Kind.CLOCK_SKEW, Severity.INFO, "clock_skew:cn042")
    assert (
        finding.message == "cn042: clock ~5 min ahead of this server's (snapshots dated after they arrive): check NTP"
    )
    assert finding.details == {"skew_minutes": 5}


def test_it_flags_snapshots_arriving_five_minutes_late_as_clock_or_backlog():
    [finding] = judge_clock("cn042", -290.0)
    assert "arrive ~5 min after they are read" in finding.message and "ingest is backlogged" in finding.message
    assert finding.details == {"skew_minutes": -5}


def test_a_steady_skew_is_the_same_finding_poll_after_poll():
    assert judge_clock("cn042", 300.4) == judge_clock("cn042", 310.0)


def test_the_threshold_is_a_site_setting():
    assert judge_clock("cn042", 45.0, Thresholds.from_mapping({"clock_skew_s": 30})) != []
