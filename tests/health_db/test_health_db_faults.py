"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py.

Every simulator fault kind, ingested poll by poll: the right event opens, lasts, and resolves once clean."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fabricweb.health.models import Event
from fabricweb.inventory.models import Port
from tests.health_db.health_db_fabric import SimFabric, open_events

RESOLVE_AFTER = 3  # FABRIC_RESOLVE_AFTER's default


@dataclass(frozen=True)
class Case:
    spec: str
    key: str
    severity: str
    message: str
    opens_after: int = 1  # polls of the fault before the event opens
    updates: str | None = None  # the message a few polls on, when it changes as the fault lasts
    details_move: bool = False  # the evidence grows while the fault lasts (an UPDATE each poll)


CASES = [
    Case(
        "cn001/mlx5_0/1:speed=QDR",
        "degraded:cn001/mlx5_0/1",
        "critical",
        "cn001 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 200 Gb/s (4X HDR): "
        "speed downgrade (QDR where HDR expected) — learned from this port's history",
    ),
    Case(
        "cn001/mlx5_0/1:width=1X",
        "degraded:cn001/mlx5_0/1",
        "critical",
        "cn001 mlx5_0/1: trained at 50 Gb/s (1X HDR), expected 200 Gb/s (4X HDR): "
        "width downgrade (1X where 4X expected) — learned from this port's history",
    ),
    Case(
        "cn004/mlx5_1/1:speed=HDR",  # ConnectX-7: too few in the fabric for a majority, history alone
        "degraded:cn004/mlx5_1/1",
        "critical",
        "cn004 mlx5_1/1: trained at 200 Gb/s (4X HDR), expected 400 Gb/s (4X NDR): "
        "speed downgrade (HDR where NDR expected) — learned from this port's history",
    ),
    Case(
        "cn001/mlx5_0/1:down",
        "down:cn001/mlx5_0/1",
        "critical",
        "cn001 mlx5_0/1: port down (DOWN, physical state Polling: no cable or the peer is off)",
    ),
    Case(
        "cn002/mlx4_0/1:disabled",
        "down:cn002/mlx4_0/1",
        "critical",
        "cn002 mlx4_0/1: port down (DOWN, physical state Disabled: disabled by an administrator or the subnet manager)",
    ),
    Case(
        "cn001/mlx5_0/1:symbol-errors=2",  # 20 per 10-s poll: over the fast rule's 10, under 120/h for 5 polls
        "symbol_errors:cn001/mlx5_0/1",
        "warning",
        "cn001 mlx5_0/1: 20 symbol errors in 10 s (over 10 per poll): the link is degrading fast; "
        "check or reseat the cable",
        details_move=True,
    ),
    Case(
        "cn001/mlx5_0:pcie=GEN3x8",
        "pcie:cn001/mlx5_0",
        "warning",
        "cn001 mlx5_0: PCIe Gen3 x8 (~63 Gb/s) limits a 200 Gb/s (4X HDR) port; PCIe trained at Gen3 x8, "
        "the card supports Gen4 x16 (reseat the card and check the slot)",
    ),
    # sysfs lists a device or port only while the driver holds it: absent from one snapshot is vanished.
    Case(
        "cn002/mlx4_0/2:vanish",
        "vanished:cn002/mlx4_0/2",
        "critical",
        "cn002 mlx4_0/2: port vanished, missing from its node's snapshots",  # judged once: never rewritten
    ),
    Case(
        "cn003/mlx5_1:vanish",
        "vanished:cn003/mlx5_1",
        "critical",
        "cn003 mlx5_1: device vanished, missing from its node's snapshots "
        "(the HCA fell off the PCIe bus or its driver was unloaded)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.spec for c in CASES])
def test_a_fault_opens_its_event_at_once_keeps_it_while_it_lasts_and_resolves_after_clean_polls(each_db, fabric, case):
    fabric.polls(3)
    assert fabric.alarms == {}

    fabric.fault(case.spec)
    fabric.polls(case.opens_after - 1)
    assert case.key not in open_events()
    fabric.poll()
    event = open_events()[case.key]
    assert (event.kind, event.severity, event.message) == (case.key.split(":")[0], case.severity, case.message)
    assert event.opened_at == fabric.now  # the poll that showed it

    fabric.polls(2)
    still = open_events()[case.key]
    assert still.pk == event.pk  # one event for the whole fault
    assert still.message == (case.updates or case.message)
    assert (still.updated_at > event.updated_at) == bool(case.updates or case.details_move)
    assert fabric.alarms == {case.key: case.severity}

    fabric.clear(case.spec)
    fabric.polls(RESOLVE_AFTER - 1)
    assert open_events()[case.key].clean_polls == RESOLVE_AFTER - 1
    fabric.poll()
    assert case.key not in open_events()
    done = Event.objects.get(key=case.key)
    assert (done.resolved_at, done.reason, done.clean_polls) == (fabric.now, "clear for 3 polls", 3)
    assert fabric.alarms == {case.key: case.severity}


def test_a_flapping_link_is_one_critical_event_that_resolves_once_stable_for_15_minutes(each_db, sim_dir):
    fab = SimFabric(sim_dir, 2)  # no fabric majority needed: a smaller fabric keeps the hour of polls quick
    fab.polls(3)
    fab.fault("cn001/mlx5_0/1:flap")
    fab.polls(2)  # the simulator takes the link down every other step
    down = open_events()["down:cn001/mlx5_0/1"]
    assert down.severity == "critical"

    fab.polls(2)
    flapping = open_events()["flapping:cn001/mlx5_0/1"]
    assert flapping.severity == "critical"
    assert flapping.message.startswith("cn001 mlx5_0/1: link flapping")
    assert "2 link downs in the last hour (link_downed)" in flapping.message
    assert flapping.message.endswith("check the cable and the switch port")

    fab.polls(8)
    events = open_events()
    # Down between bounces is told by the flapping event: the port's own down event cleared while up.
    assert set(events) >= {"flapping:cn001/mlx5_0/1"} and "down:cn001/mlx5_0/1" not in events
    assert events["flapping:cn001/mlx5_0/1"].pk == flapping.pk
    assert "6 in the last minute (over 5/min)" in events["flapping:cn001/mlx5_0/1"].message

    fab.clear("cn001/mlx5_0/1:flap")
    fab.polls(85, batch=True)  # 14 minutes (both nodes in one batch: quicker): it bounced within flapping_quiet_s
    assert open_events()["flapping:cn001/mlx5_0/1"].pk == flapping.pk
    fab.polls(10, batch=True)  # stable for 15 minutes, then three clean polls
    assert "flapping:cn001/mlx5_0/1" not in open_events()
    assert Event.objects.filter(key="flapping:cn001/mlx5_0/1").count() == 1
    assert Event.objects.filter(key="down:cn001/mlx5_0/1").count() == 1
    assert fab.alarms == {"down:cn001/mlx5_0/1": "critical", "flapping:cn001/mlx5_0/1": "critical"}


def test_counter_resets_are_recorded_on_the_port_and_raise_no_event(each_db, fabric):
    fabric.polls(3)
    fabric.fault("cn001:reset", "cn002:reset", "cn004/mlx5_0/1:reset")
    fabric.polls(6)
    assert not Event.objects.exists()
    reset_ports = Port.objects.filter(last_reset_at__isnull=False)
    assert {str(p) for p in reset_ports} >= {"cn001 mlx5_0/1", "cn001 mlx5_1/1", "cn002 mlx4_0/1", "cn004 mlx5_0/1"}


def test_the_old_hcas_capped_32_bit_counters_say_nothing_when_their_64_bit_copies_are_read(each_db, fabric):
    """ConnectX-3's counters/ data files stop at all-ones within seconds; ingest reads counters_ext/ instead,
    so every rate is known and there is nothing to tell an operator."""
    fabric.polls(4)
    old = Port.objects.filter(device__node__name="cn002")
    assert all({"port_xmit_data", "port_rcv_data"} <= set(p.capped) for p in old)
    assert not Event.objects.exists()


def test_a_capped_counter_without_a_64_bit_copy_is_on_record_as_info(each_db, fabric):
    fabric.polls(2)
    fabric.fault("cn001/mlx5_0/1:saturate")  # port_xmit_wait (32 bits, no copy) reaches all-ones in ~14 s
    fabric.polls(15)
    event = open_events()["capped_counters:cn001/mlx5_0/1"]
    assert event.severity == "info"
    assert event.message == (
        "cn001 mlx5_0/1: counters stuck at their maximum (port_xmit_wait): their rates are unknown; "
        "reset the counter (perfquery -R) or use extended counters (64-bit PMA)"
    )
    fabric.clear("cn001/mlx5_0/1:saturate")
    fabric.fault("cn001/mlx5_0/1:reset")  # perfquery -R
    fabric.polls(4)  # the poll of the reset still has no rate (from all-ones, how far down?), then three clean
    assert "capped_counters:cn001/mlx5_0/1" not in open_events()
    # Before its counter capped, one poll of 10% lost in the 30 s seen: 3.3%, under 5%.
    assert fabric.alarms == {}


def test_a_saturated_port_is_congested_by_the_share_of_link_time_it_lost(each_db, fabric):
    """The simulator's saturation loses 10% of cn001's 4X HDR link (25e9 B/s) waiting for credits: 3.125e9
    counts a 10 s poll at the assumed 8 bytes a count (a ConnectX-6 is in no row of the table), over 5%."""
    fabric.poll()  # the counters' baseline
    fabric.fault("cn001/mlx5_0/1:saturate")
    fabric.poll()
    event = open_events()["congestion:cn001/mlx5_0/1"]
    assert event.severity == "warning"
    assert event.message == (
        "cn001 mlx5_0/1: congested: 10% of the link's time lost waiting for credits in the last 10 s "
        "(port_xmit_wait at 8 bytes per count, assumed, over 5%)"
    )
    fabric.clear("cn001/mlx5_0/1:saturate")
    fabric.fault("cn001/mlx5_0/1:reset")  # its port_xmit_wait capped within ~14 s: unknown until reset
    fabric.polls(6)  # the share of the time seen falls under 5%, then three clean polls
    assert "congestion:cn001/mlx5_0/1" not in open_events()
    assert fabric.alarms == {"congestion:cn001/mlx5_0/1": "warning"}


def test_one_congested_poll_is_its_share_of_the_time_seen(each_db, fabric):
    """10% lost in one poll of the 30 s seen is 3.3% of them, under 5%; by the next poll the counter capped."""
    fabric.polls(3)
    fabric.fault("cn001/mlx5_0/1:saturate")
    fabric.polls(2)
    assert "congestion:cn001/mlx5_0/1" not in open_events()
    assert "capped_counters:cn001/mlx5_0/1" in open_events()
