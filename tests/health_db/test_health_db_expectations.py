"""Covers fabricweb/health/records/actions.py.

What a port should run at: its history, the fabric majority, operator policies, an accepted baseline."""

from __future__ import annotations

import re

import pytest

from fabricweb.health.models import LinkPolicy
from fabricweb.health.records.actions import BaselineError, accept_baseline
from fabricweb.inventory.models import Device, Node, Port
from tests.health_db.health_db_fabric import open_events


def port(name: str) -> Port:
    node, rest = name.split(" ")
    device, number = rest.split("/")
    return Port.objects.select_related("device__node").get(
        device__node__name=node, device__name=device, number=int(number)
    )


def test_every_port_stores_what_it_should_run_at_and_who_says_so(each_db, fabric):
    fabric.polls(2)
    cx6, cx3, roce = port("cn001 mlx5_0/1"), port("cn002 mlx4_0/1"), port("cn006 mlx5_0/1")
    assert (cx6.expected_speed, cx6.expected_lanes, cx6.expected_source) == (
        "HDR",
        4,
        "learned from this port's history",
    )
    assert (cx3.expected_lanes, cx3.expected_source) == (4, "learned from this port's history")
    assert (roce.expected_speed, roce.expected_lanes) == ("EDR", 4)  # 100GbE as mlx5 reports it


def test_a_port_slow_from_its_first_poll_is_caught_by_the_fabric_majority(each_db, sim_dir):
    from tests.health_db.health_db_fabric import SimFabric

    # Nodes vote, not ports: nine nodes make six ConnectX-6 ones, four of them up before cn005 (fabric_min_ports).
    fabric = SimFabric(sim_dir, 9)
    # cn005's worker starts late, on a node whose first port trained at EDR: it never held HDR.
    fabric.silent.add("cn005")
    fabric.fault("cn005/mlx5_0/1:speed=EDR")
    fabric.polls(4)
    fabric.silent.clear()
    fabric.poll()

    event = open_events()["degraded:cn005/mlx5_0/1"]
    assert event.severity == "warning"  # below what its peers run, not below its own past: likely, not certain
    assert re.fullmatch(
        r"cn005 mlx5_0/1: trained at 100 Gb/s \(4X EDR\), expected 200 Gb/s \(4X HDR\): speed downgrade "
        r"\(EDR where HDR expected\) — most MT4123 nodes in the fabric run 4X HDR \(\d of \d node votes\)",
        event.message,
    )
    assert port("cn005 mlx5_0/1").expected_source.startswith("most MT4123 nodes in the fabric")
    assert event.details["origin"] == "fabric"
    assert fabric.alarms == {"degraded:cn005/mlx5_0/1": "warning"}


def test_at_bring_up_one_batch_of_the_whole_fabric_already_knows_the_majority(each_db, sim_dir):
    from tests.health_db.health_db_fabric import SimFabric

    fab = SimFabric(sim_dir, 6, faults=("cn003/mlx5_1/1:width=2X",))
    fab.poll(batch=True)
    event = open_events()["degraded:cn003/mlx5_1/1"]
    # cn001, cn003 and cn005 run 4X HDR; cn003 runs 2X HDR too: one vote per node and link.
    assert event.message.endswith("— most MT4123 nodes in the fabric run 4X HDR (3 of 4 node votes)")
    assert "(2X where 4X expected)" in event.message


def test_an_operator_policy_beats_the_ports_history(each_db, fabric):
    fabric.polls(2)
    # The cable of cn001 mlx5_0/1 was swapped for an EDR one on purpose; cn003's spare port is meant to be down.
    LinkPolicy.objects.create(name="cn001-edr-cable", node_glob="cn001", device_glob="mlx5_0", speed="EDR", lanes=4)
    LinkPolicy.objects.create(name="spares", node_glob="cn003", device_glob="mlx5_1", expect_up=False)
    fabric.fault("cn001/mlx5_0/1:speed=EDR", "cn003/mlx5_1/1:down")
    fabric.polls(3)
    assert fabric.alarms == {}
    assert port("cn001 mlx5_0/1").expected_source == "policy 'cn001-edr-cable'"
    # ...and the other way: a site policy that says HDR for every cn* mlx5 port catches an EDR one at once.
    LinkPolicy.objects.create(name="cn-hdr", node_glob="cn*", device_glob="mlx5_*", speed="HDR", lanes=4, order=200)
    fabric.fault("cn005/mlx5_1/1:speed=EDR")
    fabric.poll()
    event = open_events()["degraded:cn005/mlx5_1/1"]
    assert event.severity == "critical"
    assert event.message.endswith("(EDR where HDR expected) — policy 'cn-hdr'")


def test_accepting_the_current_link_as_baseline_resolves_the_degraded_event(each_db, fabric):
    fabric.polls(2)
    fabric.fault("cn001/mlx5_0/1:width=1X")
    fabric.poll()
    assert open_events()["degraded:cn001/mlx5_0/1"].severity == "critical"

    done = accept_baseline(port("cn001 mlx5_0/1"))
    (policy,) = done.policies
    assert (policy.name, policy.node_glob, policy.port_glob, policy.speed, policy.lanes, policy.order) == (
        "baseline cn001 mlx5_0/1",
        "cn001",
        "1",
        "HDR",
        1,
        0,
    )
    accepted = port("cn001 mlx5_0/1")
    assert (accepted.best_speed, accepted.best_lanes) == ("HDR", 1)
    assert accepted.expected_source == "policy 'baseline cn001 mlx5_0/1'"

    fabric.polls(2)
    assert "degraded:cn001/mlx5_0/1" in open_events()  # resolved like any event: after three clean polls
    fabric.poll()
    assert "degraded:cn001/mlx5_0/1" not in open_events()
    fabric.clear("cn001/mlx5_0/1:width")  # back to 4X: above the baseline, nothing to say
    fabric.polls(2)
    assert open_events() == {}


def test_a_baseline_needs_a_port_that_is_up(each_db, fabric):
    fabric.polls(2)
    fabric.fault("cn005/mlx5_1/1:down")
    fabric.poll()
    with pytest.raises(BaselineError, match="cn005 mlx5_1/1: cannot accept the current link as baseline: the port"):
        accept_baseline(port("cn005 mlx5_1/1"))
    done = accept_baseline(Node.objects.get(name="cn005"))
    assert [p.name for p in done.policies] == ["baseline cn005 mlx5_0/1"]
    assert done.skipped == ["cn005 mlx5_1/1: the port is DOWN, not up"]
    again = accept_baseline(Device.objects.get(node__name="cn005", name="mlx5_0"))
    assert [p.pk for p in again.policies] == [done.policies[0].pk]  # accepting twice updates, never duplicates
    assert LinkPolicy.objects.filter(name__startswith="baseline ").count() == 1
