"""Covers collectors/pcie.py, collectors/link.py, fabricweb/health/rules/expectation.py,
fabricweb/health/rules/findings.py, fabricweb/health/rules/, fabricweb/health/rules/view.py, fabricweb/thresholds.py.

The HCA's PCIe link, nodes that stopped reporting, and devices or ports that vanished."""

from __future__ import annotations

import pytest

from collectors import pcie
from collectors.link import make_rate
from fabricweb.health.rules import judge_node, judge_port, judge_ports
from fabricweb.health.rules.expectation import LinkPolicy
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.health.rules.view import PcieView
from fabricweb.thresholds import Thresholds
from tests.health.health_factory import EDR, HDR, kinds, messages, port_view

NDR = make_rate("NDR", 4)


def only(judgement, kind):
    found = [f for f in judgement.findings if f.kind == kind]
    assert len(found) == 1, judgement.findings
    return found[0]


@pytest.mark.parametrize(
    ("gts", "lanes", "text", "gbps"),
    [
        (2.5, 16, "Gen1 x16", 32.0),
        (5.0, 8, "Gen2 x8", 32.0),
        (8.0, 8, "Gen3 x8", 63.0),
        (8.0, 16, "Gen3 x16", 126.0),
        (16.0, 16, "Gen4 x16", 252.1),
        (32.0, 16, "Gen5 x16", 504.1),
        (64.0, 16, "Gen6 x16", 1008.0),
    ],
)
def test_pcie_bandwidth_per_lane_follows_the_line_encoding(gts, lanes, text, gbps):
    assert pcie.describe(gts, lanes) == text
    assert pcie.usable_gbps(gts, lanes) == pytest.approx(gbps, abs=0.1)


def test_it_flags_a_pcie_link_that_trained_low_and_limits_the_port():
    j = judge_port(port_view(link=HDR, best_link=HDR, pcie=PcieView(8.0, 8, 16.0, 16)))
    f = only(j, Kind.PCIE)
    assert f.message == (
        "cn042 mlx5_0: PCIe Gen3 x8 (~63 Gb/s) limits a 200 Gb/s (4X HDR) port; "
        "PCIe trained at Gen3 x8, the card supports Gen4 x16 (reseat the card and check the slot)"
    )
    assert f.severity is Severity.WARNING
    assert f.key == "pcie:cn042/mlx5_0"


def test_a_pcie_link_trained_low_that_still_carries_the_port_is_info():
    j = judge_port(port_view(link=EDR, best_link=EDR, pcie=PcieView(16.0, 8, 16.0, 16)))
    f = only(j, Kind.PCIE)
    assert f.message == (
        "cn042 mlx5_0: PCIe trained at Gen4 x8, the card supports Gen4 x16 (reseat the card and check the slot)"
    )
    assert f.severity is Severity.INFO


def test_a_card_at_its_own_pcie_maximum_that_cannot_carry_the_port_is_info():
    j = judge_port(port_view(link=NDR, best_link=NDR, pcie=PcieView(16.0, 16, 16.0, 16)))
    f = only(j, Kind.PCIE)
    assert f.message == (
        "cn042 mlx5_0: PCIe Gen4 x16 (~252 Gb/s) limits a 400 Gb/s (4X NDR) port "
        "(the card itself is at its PCIe maximum)"
    )
    assert f.severity is Severity.INFO


def test_gen4_x16_carries_a_200_gbs_port_and_gen5_x16_a_400_gbs_one():
    assert judge_port(port_view(link=HDR, best_link=HDR, pcie=PcieView(16.0, 16, 16.0, 16))).findings == []
    assert judge_port(port_view(link=NDR, best_link=NDR, pcie=PcieView(32.0, 16, 32.0, 16))).findings == []


def test_unknown_pcie_speeds_say_nothing():
    assert judge_port(port_view(pcie=PcieView(None, None, None, None))).findings == []
    assert judge_port(port_view(pcie=None)).findings == []


def test_a_dual_port_card_reports_its_pcie_link_once():
    views = [port_view(port=n, link=HDR, best_link=HDR, pcie=PcieView(8.0, 8, 16.0, 16)) for n in (1, 2)]
    j = judge_ports(views)
    assert [f.key for f in j.findings] == ["pcie:cn042/mlx5_0"]


# --- stale and vanished ---------------------------------------------------------------


def test_it_flags_a_node_that_missed_3_polls():
    j = judge_node("cn042", 3, interval_s=10.0)
    assert messages(j) == ["cn042: no snapshot for 3 polls (~30 s): the node or its fabricweb worker is down"]
    assert j.findings[0].key == "stale:cn042"
    assert j.findings[0].severity is Severity.WARNING


def test_a_node_whose_snapshots_are_refused_is_not_called_down():
    j = judge_node("cn042", 3, interval_s=10.0, refused="snapshot would add 512 ports")
    assert messages(j) == [
        "cn042: no snapshot stored for 3 polls (~30 s): its snapshots are refused (snapshot would add 512 ports)"
    ]


def test_two_missed_polls_are_not_stale_yet_and_the_count_is_configurable():
    assert judge_node("cn042", 2).findings == []
    assert kinds(judge_node("cn042", 2, t=Thresholds(stale_after_polls=2))) == {"stale"}


def test_old_data_of_a_stale_node_is_not_judged_and_its_events_are_held():
    view = port_view(state_id=1, phys_state_id=2, node_missed_polls=4)
    j = judge_port(view)
    assert kinds(j) == {"stale"}
    assert "down:cn042/mlx5_0/1" in j.unknown
    assert "pcie:cn042/mlx5_0" in j.unknown


def test_it_names_a_vanished_device():
    j = judge_port(port_view(device_missing_polls=2))
    f = only(j, Kind.VANISHED)
    assert f.message == (
        "cn042 mlx5_0: device vanished, missing from its node's snapshots (2 in a row) "
        "(the HCA fell off the PCIe bus or its driver was unloaded)"
    )
    assert f.severity is Severity.CRITICAL
    assert f.key == "vanished:cn042/mlx5_0"
    assert "degraded:cn042/mlx5_0/1" in j.unknown


def test_it_names_a_vanished_port():
    j = judge_port(port_view(port=2, port_missing_polls=3))
    assert messages(j) == ["cn042 mlx5_0/2: port vanished, missing from its node's snapshots (3 in a row)"]


def test_a_vanished_port_nobody_expected_up_is_info():
    j = judge_port(port_view(port_missing_polls=3, ever_up=False, policy=LinkPolicy("spare", expect_up=False)))
    assert only(j, Kind.VANISHED).severity is Severity.INFO


def test_it_calls_a_device_missing_from_one_snapshot_vanished():
    f = only(judge_port(port_view(device_missing_polls=1)), Kind.VANISHED)
    assert f.message == (
        "cn042 mlx5_0: device vanished, missing from its node's snapshots "
        "(the HCA fell off the PCIe bus or its driver was unloaded)"
    )


def test_a_site_that_waits_a_poll_holds_the_ports_events_meanwhile():
    j = judge_port(port_view(device_missing_polls=1), t=Thresholds(vanished_after_polls=2))
    assert j.findings == []
    assert "symbol_errors:cn042/mlx5_0/1" in j.unknown
