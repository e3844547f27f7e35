"""Covers collectors/link.py, fabricweb/health/rules/expectation.py, fabricweb/telemetry/storage/normhold.py.

The fabric norm's votes (one per node, HCA model and link) and when a node's hardware jumps."""

from __future__ import annotations

import pytest

from collectors.link import make_rate
from fabricweb.health.rules.expectation import Majority, node_majority
from fabricweb.telemetry.storage.normhold import jump
from tests.health.health_factory import EDR, HDR

NDR = make_rate("NDR", 4)


def test_a_node_with_512_ports_votes_once_per_model_and_link():
    ports = [(f"cn00{i}", "MT4123", HDR) for i in range(1, 6) for _ in range(2)]
    ports += [("rogue", "MT4123", NDR)] * 512
    assert node_majority(ports)["MT4123"] == Majority("MT4123", HDR, 5, 6)


def test_a_node_running_two_links_votes_for_each_and_unknown_links_do_not_vote():
    ports = [("cn001", "MT4123", HDR), ("cn001", "MT4123", EDR), ("cn002", "MT4123", HDR), ("cn003", "MT4123", None)]
    assert node_majority(ports)["MT4123"] == Majority("MT4123", HDR, 2, 3)


def test_it_says_why_512_ports_after_2_is_a_jump():
    assert jump(["MT4123", "MT4123"], 2, ["MT4123"] * 4, 512) == (
        "reported 512 ports on 4 HCAs (MT4123), had 2 ports on 2 HCAs (MT4123)"
    )


@pytest.mark.parametrize(
    ("had", "now", "held"),
    [
        (2, 19, False),  # under ten times as many: a card added, not a jump
        (2, 20, True),
        (1, 10, True),
        (0, 9, False),  # a node that had no port: ten or more is a jump, a handful is not
        (16, 2, False),  # fewer ports add no vote
    ],
)
def test_ten_times_the_ports_it_had_is_a_jump(had, now, held):
    assert bool(jump(["MT4123"], had, ["MT4123"], now)) is held


def test_an_hca_model_it_never_had_is_a_jump_and_a_model_first_read_is_not():
    assert jump(["MT4123", "MT4123"], 2, ["MT4123", "MT4129"], 3) == (
        "reported HCA models it never had: MT4129 (had MT4123)"
    )
    assert jump([None], 1, ["MT4123"], 1) == ""  # its model was unreadable before: nothing to compare with
    both = jump(["MT4099"], 2, ["MT4123"], 40)
    assert both == "reported HCA models it never had: MT4123 (had MT4099); reported 40 ports on 1 HCA (MT4123), " + (
        "had 2 ports on 1 HCA (MT4099)"
    )
