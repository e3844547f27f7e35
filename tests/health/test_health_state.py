"""Covers collectors/link.py, fabricweb/health/rules/expectation.py, fabricweb/health/rules/findings.py,
fabricweb/health/rules/, fabricweb/thresholds.py.

Down, unused, no subnet manager, and degraded links: messages as operators read them."""

from __future__ import annotations

import itertools

import pytest

from collectors.link import SPEED_RANK, SPEEDS, WIDTHS, make_rate
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.expectation import LinkPolicy, Majority
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.thresholds import Thresholds
from tests.health.health_factory import EDR, HDR, QDR, kinds, messages, port_view

ALL_LINKS = [make_rate(s.name, w) for s, w in itertools.product(SPEEDS, WIDTHS)]


def only(judgement, kind):
    found = [f for f in judgement.findings if f.kind == kind]
    assert len(found) == 1, judgement.findings
    return found[0]


# --- down and unused ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("phys_id", "phys_name", "words"),
    [
        (1, "Sleep", "physical state Sleep: the port is powered down"),
        (2, "Polling", "physical state Polling: no cable or the peer is off"),
        (3, "Disabled", "physical state Disabled: disabled by an administrator or the subnet manager"),
        (
            4,
            "PortConfigurationTraining",
            "physical state PortConfigurationTraining: the link is still training; "
            "stuck here, the two ends cannot agree on speed or width",
        ),
        (
            6,
            "LinkErrorRecovery",
            "physical state LinkErrorRecovery: the link is retraining after errors; check the cable",
        ),
        (7, "Phy Test", "physical state Phy Test: the port is in a physical test mode"),
        (None, None, "physical state unknown"),
    ],
)
def test_it_flags_a_port_that_was_up_and_is_down_naming_the_physical_state(phys_id, phys_name, words):
    j = judge_port(port_view(state_id=1, state_name="DOWN", phys_state_id=phys_id, phys_state_name=phys_name))
    down = only(j, Kind.DOWN)
    assert down.message == f"cn042 mlx5_0/1: port down (DOWN, {words})"
    assert down.severity is Severity.CRITICAL
    assert down.key == "down:cn042/mlx5_0/1"
    assert down.details["expected_up_because"] == "it has been ACTIVE before"


def test_it_names_the_physical_state_from_its_id_when_the_name_is_missing():
    j = judge_port(port_view(state_id=1, state_name=None, phys_state_id=2, phys_state_name=None))
    assert messages(j) == ["cn042 mlx5_0/1: port down (DOWN, physical state Polling: no cable or the peer is off)"]


def test_it_calls_a_never_active_port_unused():
    j = judge_port(port_view(state_id=1, phys_state_id=2, phys_state_name="Polling", ever_up=False, best_link=None))
    assert j.findings == []


def test_a_policy_expecting_the_port_up_makes_a_never_active_port_down():
    policy = LinkPolicy("cn-hdr", node="cn*", speed="HDR", lanes=4)
    j = judge_port(port_view(state_id=1, phys_state_id=2, phys_state_name="Polling", ever_up=False, policy=policy))
    down = only(j, Kind.DOWN)
    assert down.message == "cn042 mlx5_0/1: port down (DOWN, physical state Polling: no cable or the peer is off)"
    assert down.details["expected_up_because"] == "policy 'cn-hdr' expects it up"


def test_a_policy_marking_a_port_spare_silences_its_down_state():
    policy = LinkPolicy("spare", port="2", expect_up=False)
    j = judge_port(port_view(state_id=1, phys_state_id=3, phys_state_name="Disabled", policy=policy))
    assert j.findings == []


def test_an_active_port_is_not_down():
    assert Kind.DOWN not in kinds(judge_port(port_view()))


def test_down_waits_the_configured_number_of_polls():
    t = Thresholds(down_after_polls=2)
    view = port_view(state_id=1, phys_state_id=2, phys_state_name="Polling")
    assert judge_port(view, t).findings == []
    assert kinds(judge_port(port_view(state_id=1, phys_state_id=2, state_polls=2), t)) == {"down"}


# --- no subnet manager --------------------------------------------------------------


@pytest.mark.parametrize(("state_id", "state_name"), [(2, "INIT"), (3, "ARMED")])
def test_it_blames_the_subnet_manager_for_a_linkup_port_stuck_in_init_or_armed(state_id, state_name):
    j = judge_port(port_view(state_id=state_id, state_name=state_name, state_polls=2))
    f = only(j, Kind.NO_SM)
    assert f.message == (
        f"cn042 mlx5_0/1: link is up (LinkUp) but the port is {state_name}: "
        "the subnet manager is not answering (run sminfo, check opensm)"
    )
    assert f.severity is Severity.CRITICAL
    assert Kind.DOWN not in kinds(j)


def test_it_gives_the_subnet_manager_one_sweep_before_blaming_it():
    assert judge_port(port_view(state_id=2, state_name="INIT", state_polls=1)).findings == []


def test_a_never_active_port_waiting_for_the_subnet_manager_is_a_warning():
    j = judge_port(port_view(state_id=2, state_name="INIT", state_polls=5, ever_up=False, best_link=None))
    assert only(j, Kind.NO_SM).severity is Severity.WARNING


def test_init_without_linkup_is_down_not_a_subnet_manager_problem():
    j = judge_port(port_view(state_id=2, state_name="INIT", phys_state_id=2, phys_state_name="Polling", state_polls=5))
    assert kinds(j) == {"down"}


def test_an_ethernet_port_has_no_subnet_manager_to_blame():
    j = judge_port(port_view(state_id=2, state_name="INIT", state_polls=5, link_layer="Ethernet"))
    assert Kind.NO_SM not in kinds(j)


# --- degraded -----------------------------------------------------------------------


@pytest.mark.parametrize("actual", ALL_LINKS, ids=lambda r: r.link_name)
def test_every_speed_and_width_against_4x_edr(actual):
    j = judge_port(port_view(link=actual, best_link=EDR))
    slow = SPEED_RANK[actual.speed] < SPEED_RANK["EDR"]
    narrow = actual.lanes < 4
    assert (Kind.DEGRADED in kinds(j)) is (slow or narrow)
    if slow or narrow:
        f = only(j, Kind.DEGRADED)
        assert f.message.startswith(f"cn042 mlx5_0/1: trained at {actual.describe()}, expected 100 Gb/s (4X EDR): ")
        assert f.message.endswith(" — learned from this port's history")
        assert f.details["downgrade"] == ("speed+width" if slow and narrow else "speed" if slow else "width")


def test_every_speed_and_width_pair_is_degraded_exactly_when_below_in_speed_or_width():
    for actual, expected in itertools.product(ALL_LINKS, ALL_LINKS):
        j = judge_port(port_view(link=actual, best_link=expected))
        below = SPEED_RANK[actual.speed] < SPEED_RANK[expected.speed] or actual.lanes < expected.lanes
        assert (Kind.DEGRADED in kinds(j)) is below, (actual, expected)


def test_it_flags_speed_downgrade_with_the_source():
    j = judge_port(port_view(link=QDR, best_link=EDR))
    f = only(j, Kind.DEGRADED)
    assert f.message == (
        "cn042 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 100 Gb/s (4X EDR): speed downgrade "
        "(QDR where EDR expected) — learned from this port's history"
    )
    assert f.severity is Severity.CRITICAL


def test_it_flags_width_downgrade():
    j = judge_port(port_view(link=make_rate("EDR", 1), best_link=EDR))
    assert only(j, Kind.DEGRADED).message == (
        "cn042 mlx5_0/1: trained at 25 Gb/s (1X EDR), expected 100 Gb/s (4X EDR): width downgrade "
        "(1X where 4X expected) — learned from this port's history"
    )


def test_it_tells_qdr_from_fdr10_though_both_print_40_gbs():
    j = judge_port(port_view(link=QDR, best_link=make_rate("FDR10", 4)))
    assert only(j, Kind.DEGRADED).message == (
        "cn042 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 40 Gb/s (4X FDR10): speed downgrade "
        "(QDR where FDR10 expected, the same 40 Gb/s total but 8b/10b encoding leaves 32 for data) "
        "— learned from this port's history"
    )


def test_it_flags_a_port_slow_since_its_first_poll_from_the_fabric_majority_as_a_warning():
    j = judge_port(port_view(link=QDR, best_link=QDR, hca_type="MT4123", majority=Majority("MT4123", HDR, 37, 40)))
    f = only(j, Kind.DEGRADED)
    assert f.message == (
        "cn042 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 200 Gb/s (4X HDR): speed downgrade "
        "(QDR where HDR expected) — most MT4123 nodes in the fabric run 4X HDR (37 of 40 node votes)"
    )
    # Inferred from peers, not from this port's own past: likely, not certain.
    assert f.severity is Severity.WARNING


def test_infiniband_peers_set_no_norm_for_a_roce_port():
    majority = Majority("MT4123", HDR, 37, 40)
    view = port_view(link=make_rate("EDR", 1), best_link=None, link_layer="Ethernet", majority=majority)
    assert judge_port(view).findings == []


def test_it_judges_against_a_policy_and_calls_it_critical():
    j = judge_port(port_view(link=EDR, best_link=EDR, policy=LinkPolicy("cn-hdr", speed="HDR", lanes=4)))
    f = only(j, Kind.DEGRADED)
    assert f.message.endswith("— policy 'cn-hdr'")
    assert f.severity is Severity.CRITICAL


def test_a_port_faster_than_expected_is_not_degraded():
    assert judge_port(port_view(link=HDR, best_link=EDR)).findings == []


def test_degradation_is_judged_only_on_active_ports():
    j = judge_port(port_view(state_id=1, phys_state_id=2, link=make_rate("SDR", 1)))
    assert kinds(j) == {"down"}


def test_a_port_with_no_link_rate_is_not_called_degraded_but_left_unjudged():
    from collectors.link import Rate

    j = judge_port(port_view(link=Rate(0.0, None, None)))
    assert j.findings == []
    assert "degraded:cn042/mlx5_0/1" in j.unknown


def test_the_judgement_carries_the_expectation_for_the_metrics():
    j = judge_port(port_view(link=QDR, best_link=EDR))
    assert j.expectation.link == EDR
