"""Covers collectors/link.py, fabricweb/health/rules/expectation.py.

Where a port's expected link comes from: policy, its own history, or its peers."""

from __future__ import annotations

import pytest

from collectors.link import Rate, make_rate
from fabricweb.health.rules.expectation import (
    HISTORY,
    LinkPolicy,
    Majority,
    baseline_policy,
    expected_link,
    fabric_majority,
    match_policy,
    remember_best,
)
from tests.health.health_factory import EDR, HDR, QDR


def test_policy_beats_history_and_fabric():
    policy = LinkPolicy("cn-hdr", node="cn*", device="mlx5_*", speed="HDR", lanes=4)
    exp = expected_link(policy, best=EDR, majority=Majority("MT4123", EDR, 40, 40))
    assert (exp.link, exp.source, exp.origin) == (HDR, "policy 'cn-hdr'", "policy")


def test_a_policy_without_a_link_leaves_the_link_to_history():
    policy = LinkPolicy("spares", expect_up=False)
    exp = expected_link(policy, best=EDR, majority=None)
    assert (exp.link, exp.source, exp.expect_up_by_policy) == (EDR, HISTORY, False)


def test_it_learns_from_this_ports_history():
    exp = expected_link(None, best=EDR, majority=None)
    assert (exp.link, exp.source, exp.origin) == (EDR, "learned from this port's history", "history")


def test_fabric_majority_catches_a_port_slow_since_its_first_poll():
    # The port has only ever run 4X QDR, so its own history expects nothing better.
    exp = expected_link(None, best=QDR, majority=Majority("MT4123", HDR, 37, 40))
    assert exp.link == HDR
    assert exp.source == "most MT4123 nodes in the fabric run 4X HDR (37 of 40 node votes)"
    assert exp.origin == "fabric"


def test_history_wins_the_wording_when_both_agree():
    exp = expected_link(None, best=HDR, majority=Majority("MT4123", HDR, 37, 40))
    assert exp.source == HISTORY


def test_the_better_of_history_and_fabric_takes_speed_and_width_separately():
    exp = expected_link(None, best=make_rate("HDR", 1), majority=Majority("MT4123", EDR, 30, 40))
    assert exp.link == HDR
    assert exp.origin == "history+fabric"
    assert exp.source == (
        "learned from this port's history (1X HDR) and most MT4123 nodes in the fabric run 4X EDR (30 of 40 node votes)"
    )


@pytest.mark.parametrize(
    ("count", "total", "counts"),
    [
        (3, 3, False),  # too few ports of the model: one odd port would set the norm
        (4, 4, True),  # the documented minimum
        (2, 4, False),  # half is not most
        (3, 5, True),
    ],
)
def test_fabric_majority_needs_a_minimum_of_ports_and_more_than_half(count, total, counts):
    majority = Majority("MT4123", HDR, count, total)
    exp = expected_link(None, best=None, majority=majority, min_ports=4)
    assert (exp.link == HDR) is counts
    if not counts:
        assert (exp.link, exp.origin, exp.source) == (None, "none", "nothing known yet")


def test_fabric_majority_counts_active_links_per_hca_model():
    ports = [("MT4123", HDR)] * 37 + [("MT4123", EDR)] * 3 + [("MT4119", EDR)] * 2
    ports += [(None, HDR), ("MT4123", None), ("MT4123", Rate(0.0, None, None))]
    result = fabric_majority(ports)
    assert result["MT4123"] == Majority("MT4123", HDR, 37, 40)
    assert result["MT4119"] == Majority("MT4119", EDR, 2, 2)
    assert set(result) == {"MT4123", "MT4119"}


def test_a_tie_in_the_fabric_goes_to_the_slower_link():
    result = fabric_majority([("MT4123", HDR), ("MT4123", EDR)])
    assert result["MT4123"].link == EDR


def test_policies_match_by_order_then_specificity_then_name():
    broad = LinkPolicy("all-cn", node="cn*", speed="EDR", lanes=4)
    exact = LinkPolicy("cn042", node="cn042", speed="HDR", lanes=4)
    first = LinkPolicy("override", node="*", speed="QDR", lanes=4, order=10)
    assert match_policy([broad, exact], "cn042", "mlx5_0", 1) is exact
    assert match_policy([broad, exact], "cn043", "mlx5_0", 1) is broad
    assert match_policy([broad, exact, first], "cn042", "mlx5_0", 1) is first
    assert match_policy([broad], "gpu01", "mlx5_0", 1) is None


def test_policies_glob_on_device_and_port_and_ignore_host_name_case():
    p = LinkPolicy("port2", node="CN0[0-4]?", device="mlx5_[01]", port="2", speed="HDR", lanes=4)
    assert p.matches("cn042", "mlx5_1", 2)
    assert not p.matches("cn042", "mlx5_1", 1)
    assert not p.matches("cn052", "mlx5_1", 2)


def test_accepting_the_current_link_as_baseline_stores_an_exact_policy_that_wins():
    broad = LinkPolicy("all-cn", node="cn*", speed="HDR", lanes=4, order=1)
    baseline = baseline_policy("cn042", "mlx5_0", 1, make_rate("HDR", 2))
    assert match_policy([broad, baseline], "cn042", "mlx5_0", 1) is baseline
    assert match_policy([broad, baseline], "cn042", "mlx5_0", 2) is broad
    exp = expected_link(baseline, best=HDR, majority=None)
    assert exp.link == make_rate("HDR", 2)
    assert exp.source == "policy 'baseline cn042 mlx5_0/1'"


def test_a_baseline_for_a_name_with_glob_characters_matches_only_that_name():
    baseline = baseline_policy("node[1]", "mlx5_0", 1, EDR)
    assert baseline.matches("node[1]", "mlx5_0", 1)
    assert not baseline.matches("node1", "mlx5_0", 1)


def test_only_an_active_port_teaches_its_best_link():
    assert remember_best(EDR, make_rate("EDR", 1), active=True) == EDR
    assert remember_best(QDR, EDR, active=True) == EDR
    assert remember_best(None, EDR, active=False) is None
    assert remember_best(None, Rate(0.0, None, None), active=True) is None


def test_a_policy_naming_only_the_speed_learns_the_width():
    policy = LinkPolicy("hdr-any-width", speed="HDR")
    exp = expected_link(policy, best=make_rate("EDR", 2), majority=None)
    assert exp.link == make_rate("HDR", 2)
    assert exp.source == "policy 'hdr-any-width' (HDR), the rest learned from this port's history"
    assert exp.origin == "policy"


def test_a_policy_naming_only_the_width_learns_the_speed():
    exp = expected_link(LinkPolicy("four-lanes", lanes=4), best=make_rate("HDR", 1), majority=None)
    assert exp.link == HDR


def test_a_partial_policy_with_nothing_learned_expects_nothing_yet():
    exp = expected_link(LinkPolicy("hdr", speed="HDR"), best=None, majority=None)
    assert exp.link is None
