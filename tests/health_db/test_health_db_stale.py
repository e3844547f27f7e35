"""Covers fabricweb/health/records/staleness.py.

Nodes that stop taking their polls: stale after three missed polls, resolved once they report again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.health.models import Event
from fabricweb.health.records.staleness import check_stale
from fabricweb.inventory.models import Node
from tests.health_db.health_db_fabric import open_events

BEAT_LAG = timedelta(seconds=1)  # beat runs the check a moment after the polls land


@pytest.fixture
def fabric(fabric, poll_ledger):
    fabric.ledger = poll_ledger
    return fabric


def poll_and_check(fabric, n: int = 1):
    """`n` rounds of beat's: dispatch the polls, the nodes answer (or not), check staleness."""
    for _ in range(n):
        fabric.poll()
        # As scheduling.missed_polls: the counts of the nodes whose queue still holds a poll.
        missed = {node: count for node, count in fabric.ledger.missed().items() if node in fabric.holding}
        report = check_stale(missed, now=fabric.now + BEAT_LAG)
        fabric.note_alarms()
    return report


def test_a_node_that_stops_reporting_is_stale_after_three_missed_polls_and_clear_once_it_reports(each_db, fabric):
    poll_and_check(fabric, 2)
    fabric.silent.add("cn003")  # its worker died; the node itself may be fine
    # The first poll it does not take is sent now, and is missed one interval later, at the next dispatch.
    poll_and_check(fabric, 3)
    assert "stale:cn003" not in open_events() and not Node.objects.get(name="cn003").stale
    report = poll_and_check(fabric)
    assert report.stale == ["cn003"] and report.opened == 1
    assert list(Node.objects.filter(stale=True).values_list("name", flat=True)) == ["cn003"]

    event = open_events()["stale:cn003"]
    assert (event.severity, event.kind, event.device_id, event.port_id) == ("warning", "stale", None, None)
    assert event.message == "cn003: no snapshot for 3 polls (~30 s): the node or its fabricweb worker is down"
    poll_and_check(fabric)
    assert open_events()["stale:cn003"].message.startswith("cn003: no snapshot for 4 polls (~40 s)")
    # Its ports' own events are held, not resolved, while nothing is known of them.
    assert not Event.objects.filter(node__name="cn003").exclude(kind="stale").exists()

    fabric.silent.clear()
    poll_and_check(fabric)
    assert not Node.objects.get(name="cn003").stale  # its ports are known again: no longer "unknown"
    poll_and_check(fabric)
    assert open_events()["stale:cn003"].clean_polls == 2
    poll_and_check(fabric)
    assert "stale:cn003" not in open_events()
    assert Event.objects.get(key="stale:cn003").reason == "clear for 3 polls"
    assert fabric.alarms == {"stale:cn003": "warning"}


def test_a_vanished_node_is_stale_and_comes_back_as_after_a_reboot(each_db, fabric):
    poll_and_check(fabric, 2)
    fabric.fault("cn004:vanish")  # the whole tree is gone: no worker sends anything for it
    poll_and_check(fabric, 4)
    assert open_events()["stale:cn004"].message.startswith("cn004: no snapshot for 3 polls")
    fabric.clear("cn004:vanish")
    poll_and_check(fabric, 3)
    assert "stale:cn004" not in open_events()
    assert fabric.alarms == {"stale:cn004": "warning"}  # counters back at zero: a reset, not an alarm


def test_a_node_held_stale_by_a_worker_that_reports_now_and_then_stays_one_event(each_db, fabric):
    poll_and_check(fabric, 2)
    fabric.silent.add("cn005")
    poll_and_check(fabric, 4)
    first = open_events()["stale:cn005"]
    for _ in range(2):  # one snapshot, then silence again
        fabric.silent.discard("cn005")
        poll_and_check(fabric)
        fabric.silent.add("cn005")
        poll_and_check(fabric, 4)
    assert open_events()["stale:cn005"].pk == first.pk
    assert Event.objects.filter(key="stale:cn005").count() == 1


def test_a_node_clock_five_minutes_ahead_keeps_being_stored_and_is_flagged_until_fixed(each_db, fabric):
    from datetime import UTC, datetime

    from collectors import read_host, to_dict
    from fabricweb.telemetry.ingest import ingest_snapshot

    server = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    path = f"{fabric.out}/{fabric.nodes[0]}"
    node = fabric.nodes[0]

    def poll(k: int, skew_s: float) -> None:
        fabric.sim.step(10)
        at = server + timedelta(seconds=10 * k)
        snap = to_dict(read_host(path, host=node, use_verbs=False, now=(at + timedelta(seconds=skew_s)).timestamp()))
        ingest_snapshot(snap, now=at)

    for k in range(3):
        poll(k, 300.0)
    event = open_events()[f"clock_skew:{node}"]
    assert event.severity == "info" and "clock ~5 min ahead" in event.message
    for k in range(3, 7):  # NTP fixed it
        poll(k, 0.0)
    assert f"clock_skew:{node}" not in open_events()
    assert Event.objects.get(pk=event.pk).reason.startswith("clear for 3 polls")
