"""Covers collectors/link.py, fabricweb/health/records/context.py, fabricweb/health/records/actions.py,
fabricweb/health/rules/expectation.py, fabricweb/health/records/staleness.py.

The fabric norm counts nodes, not ports: one node reporting 512 ports cannot set what every other node is
judged against, a stale node does not vote, and a node whose hardware jumps is held out until accepted."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from collectors.link import make_rate
from fabricweb.health.records import context
from fabricweb.health.records.actions import NormHoldError, accept_norm
from fabricweb.health.rules.expectation import Majority
from fabricweb.inventory.models import Node
from tests.health_db.health_db_fabric import SimFabric, open_events

HDR, NDR = make_rate("HDR", 4), make_rate("NDR", 4)
ROGUE = "cn001"  # ConnectX-6 (MT4123), two ports at 4X HDR like its peers


class RogueFabric(SimFabric):
    """Nine simulated nodes, six of them ConnectX-6 at 4X HDR. A node in `reports` sends, in place of its
    devices, what that function makes of them (from the real snapshot)."""

    def __init__(self, out) -> None:
        super().__init__(out, 9)
        self.reports: dict[str, Callable[[list[dict]], list[dict]]] = {}

    def snapshot(self, node: str) -> dict:
        snap = super().snapshot(node)
        if node in self.reports:
            snap["devices"] = self.reports[node](snap["devices"])
        return snap


def rogue(devices: list[dict]) -> list[dict]:
    """512 ACTIVE MT4123 ports at 4X NDR: 4 HCAs of 128 ports, the most a snapshot may carry."""
    return [ndr_device(devices[0], i) for i in range(4)]


def ndr_device(template: dict, index: int) -> dict:
    device = orjson.loads(orjson.dumps(template))  # copies made from JSON: copy.deepcopy took seconds a test
    device["name"] = f"mlx5_{index}"
    port = device["ports"][0]
    port["rate"] = {"gbps": 400.0, "lanes": 4, "speed": "NDR", "bytes_per_second": 50_000_000_000.0}
    blob = orjson.dumps(port)
    device["ports"] = [dict(orjson.loads(blob), port=number) for number in range(1, 129)]
    return device


@pytest.fixture
def nine(sim_dir, settings) -> RogueFabric:
    # Ingest may bound the ports a host adds per hour; the norm must hold whatever that bound is.
    settings.FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR = 10_000
    fab = RogueFabric(sim_dir)
    assert sorted(n for n, kind in fab.kinds.items() if kind == "cx6") == [
        "cn001", "cn002", "cn003", "cn004", "cn005", "cn007",
    ]  # fmt: skip
    return fab


def mt4123() -> Majority:
    context.forget()
    return context.load_majorities()["MT4123"]


def test_one_node_reporting_512_ndr_ports_opens_no_event_on_any_other_node(each_db, nine):
    nine.polls(2)
    assert mt4123() == Majority("MT4123", HDR, 6, 6)
    nine.reports[ROGUE] = rogue
    nine.polls(6)  # past the norms' 30 s cache, several times

    others = {key for key in open_events() if not key.endswith(f":{ROGUE}") and f":{ROGUE}/" not in key}
    assert others == set()
    assert nine.alarms == {}
    node = Node.objects.get(name=ROGUE)
    assert node.norm_hold_reason == "reported 512 ports on 4 HCAs (MT4123), had 2 ports on 2 HCAs (MT4123)"
    assert node.norm_hold_since is not None
    assert mt4123() == Majority("MT4123", HDR, 5, 5)  # held out: it does not vote at all


def test_an_accepted_node_counts_as_one_vote_however_many_ports_it_has(each_db, nine):
    nine.polls(2)
    nine.reports[ROGUE] = rogue
    nine.poll()
    done = accept_norm(Node.objects.get(name=ROGUE), by="olga")
    assert done.norm_hold_reason == "" and done.norm_hold_since is None
    assert (done.norm_accepted_by, done.norm_accepted_at is not None) == ("olga", True)
    assert mt4123() == Majority("MT4123", HDR, 5, 6)  # its 512 NDR ports: one vote
    nine.polls(4)
    assert Node.objects.get(name=ROGUE).norm_hold_since is None  # the same hardware again is no new jump
    assert nine.alarms == {}
    with pytest.raises(NormHoldError, match=f"{ROGUE}: not held out of the fabric norm"):
        accept_norm(Node.objects.get(name=ROGUE), by="olga")


def test_a_node_gaining_an_hca_model_it_never_had_is_held_out(each_db, nine):
    nine.polls(2)

    def one_more(devices: list[dict]) -> list[dict]:
        added = ndr_device(devices[0], 2)
        added["hca_type"], added["ports"] = "MT4129", added["ports"][:1]
        return [*devices, added]

    nine.reports["cn002"] = one_more
    nine.poll()
    node = Node.objects.get(name="cn002")
    assert node.norm_hold_reason == "reported HCA models it never had: MT4129 (had MT4123)"


def test_a_stale_nodes_ports_do_not_count(each_db, nine, poll_ledger):
    from fabricweb.health.records.staleness import check_stale

    nine.ledger = poll_ledger
    nine.polls(2)
    assert mt4123().total == 6
    nine.silent.add("cn003")
    for _ in range(5):
        nine.poll()
        missed = {n: c for n, c in nine.ledger.missed().items() if n in nine.holding}
        check_stale(missed, now=nine.now)
    assert Node.objects.get(name="cn003").stale
    assert mt4123() == Majority("MT4123", HDR, 5, 5)


def test_a_fabric_that_mostly_runs_ndr_still_expects_ndr(each_db, nine):
    # Four of six ConnectX-6 nodes really trained at NDR (new cables); two stayed at HDR.
    for node in ("cn001", "cn002", "cn003", "cn005"):
        nine.fault(f"{node}/mlx5_0/1:speed=NDR", f"{node}/mlx5_1/1:speed=NDR")
    nine.polls(2)
    assert mt4123() == Majority("MT4123", NDR, 4, 6)
