"""Covers fabricweb/alerts/routing.py, fabricweb/health/records/staleness.py, fabricweb/alerts/outbox.py.

Routing on both databases: the outbox written with the event change, `for`, grouping, flap damping,
silences, acknowledgements and repeats. Events change through EventBook, as ingest changes them;
routing runs at chosen times (route(now=...))."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from fabricweb.alerts.models import Delivery, Outbox, Thread
from fabricweb.alerts.routing import route
from fabricweb.health.models import Acknowledgement, Event, Silence
from fabricweb.health.records.staleness import check_stale
from tests.alerts.alerts_support import Fabric, channel, event, later


@pytest.fixture
def fab():
    return Fabric()


def deliveries(reason: str | None = None) -> list[Delivery]:
    qs = Delivery.objects.order_by("id")
    return list(qs.filter(reason=reason) if reason else qs)


def test_an_event_change_is_in_the_outbox_of_its_own_transaction(each_db, fab):
    channel()
    at = timezone.now()
    fab.port("cn001")
    with pytest.raises(RuntimeError), transaction.atomic():
        fab.open(at, "cn001/mlx5_0/1")
        assert Outbox.objects.count() == 1  # written with the event, before any commit
        raise RuntimeError("the ingest transaction fails")
    assert Outbox.objects.count() == 0 and Event.objects.count() == 0
    fab.open(at, "cn001/mlx5_0/1")
    [row] = Outbox.objects.all()
    assert (row.event.key, row.change) == ("down:cn001/mlx5_0/1", "opened")


def test_without_an_enabled_channel_ingest_writes_no_outbox_rows(each_db, fab):
    channel(enabled=False)
    fab.open(timezone.now(), "cn001/mlx5_0/1")
    assert Outbox.objects.count() == 0


def test_an_event_that_opens_and_resolves_is_announced_then_resolved(each_db, fab):
    channel()
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1")
    route(now=at)
    [firing] = deliveries()
    body = firing.payload
    assert (body["version"], body["reason"], body["status"], body["count"]) == (1, "firing", "firing", 1)
    assert body["id"] == str(firing.uid)
    item = body["events"][0]
    assert (item["node"], item["device"], item["port"], item["kind"], item["severity"]) == (
        "cn001", "mlx5_0", 1, "down", "critical"
    )  # fmt: skip
    assert item["expected_link"] == "4X HDR" and item["actual_link"] == "DOWN / Polling"
    assert item["url"] == "http://localhost:8000/ports/cn001/mlx5_0/1/"
    assert body["title"].startswith("FIRING: cn001 mlx5_0/1: port down")
    fab.resolve(later(at, 30), "cn001/mlx5_0/1")
    route(now=later(at, 31))
    [_, resolved] = deliveries()
    assert resolved.payload["status"] == "resolved"
    assert resolved.payload["events"][0]["resolved_at"] is not None
    assert Thread.objects.count() == 0 and Outbox.objects.count() == 0


def test_the_outbox_costs_ingest_two_queries_however_many_events_changed(each_db, fab):
    channel()
    at = timezone.now()
    keys = [f"cn001/mlx5_{d}/{p}" for d in range(18) for p in (1, 2)]
    for key in keys:
        fab.port(*key.split("/")[:2], int(key.split("/")[2]))
    seen = []

    def count(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    from django.db import connection

    with connection.execute_wrapper(count):
        fab.open(at, *keys)
    ours = [q for q in seen if "alerts_" in q]
    assert len(ours) == 2  # is a channel enabled? then one INSERT of 36 rows
    assert Outbox.objects.count() == 36


def test_a_node_found_stale_by_the_periodic_check_is_in_the_outbox(each_db, fab):
    channel(severities=["warning"])
    fab.port("cn001")
    assert check_stale({"cn001": 3}).opened == 1  # missed its last three polls
    [row] = Outbox.objects.select_related("event")
    assert (row.event.key, row.change) == ("stale:cn001", "opened")
    route()
    [page] = deliveries()
    assert page.payload["events"][0]["url"] == "http://localhost:8000/nodes/cn001/"
    assert page.payload["events"][0]["device"] is None


def test_a_warning_that_clears_within_the_for_wait_pages_nobody(each_db, fab):
    channel(severities=["critical", "warning"], wait_s=30)
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1", kind="degraded", severity="warning")
    route(now=later(at, 10))
    assert deliveries() == []
    fab.resolve(later(at, 20), "cn001/mlx5_0/1", kind="degraded")  # 2 polls later: clear
    route(now=later(at, 21))
    route(now=later(at, 60))
    assert deliveries() == [] and Thread.objects.count() == 0
    # One that stays past the wait is sent.
    fab.open(later(at, 100), "cn002/mlx5_0/1", kind="degraded", severity="warning")
    route(now=later(at, 120))
    assert deliveries() == []
    route(now=later(at, 131))
    assert [d.reason for d in deliveries()] == ["firing"]


def test_a_key_that_clears_and_opens_again_between_two_passes_waits_afresh(each_db, fab):
    channel(wait_s=30)
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1")
    route(now=later(at, 5))
    fab.resolve(later(at, 10), "cn001/mlx5_0/1")
    fab.open(later(at, 12), "cn001/mlx5_0/1")
    route(now=later(at, 13))  # both changes in one pass: the dropped thread's row is reused
    route(now=later(at, 35))
    assert deliveries() == []  # 30 s from the second opening, not the first
    route(now=later(at, 43))
    [page] = deliveries()
    assert page.payload["events"][0]["opened_at"] == Event.objects.get(resolved_at__isnull=True).opened_at.strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert Thread.objects.count() == 1


def test_a_channel_gets_only_the_severities_routed_to_it(each_db, fab):
    pager = channel("pager", severities=["critical"])
    chat = channel("chat", severities=["critical", "warning"])
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1", kind="degraded", severity="warning")
    fab.open(at, "cn002/mlx5_0/1")
    route(now=at)
    got = {d.channel_id: sorted(d.keys.split("\n")) for d in deliveries()}
    assert got == {
        pager.pk: ["down:cn002/mlx5_0/1"],
        chat.pk: ["degraded:cn001/mlx5_0/1", "down:cn002/mlx5_0/1"],
    }


def test_an_announced_warning_that_becomes_critical_is_announced_again(each_db, fab):
    channel(severities=["critical", "warning"])
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1", kind="degraded", severity="warning")
    route(now=at)
    fab.escalate(later(at, 60), "cn001/mlx5_0/1", kind="degraded", severity="critical")
    route(now=later(at, 61))
    first, second = deliveries()
    assert (first.reason, first.payload["events"][0]["severity"]) == ("firing", "warning")
    assert (second.reason, second.payload["events"][0]["severity"]) == ("firing", "critical")
    assert second.payload["events"][0]["reason"].startswith("was warning, now critical")
    route(now=later(at, 120))
    assert len(deliveries()) == 2


def test_a_burst_of_36_port_down_events_is_one_notification(each_db, fab):
    channel(group_s=2)
    at = timezone.now()
    keys = [f"cn{n:03d}/mlx5_0/1" for n in range(1, 37)]
    fab.open(at, *keys[:20])  # two ingest batches within a second
    fab.open(later(at, 0.8), *keys[20:])
    route(now=later(at, 0.9))
    assert deliveries() == []  # the group window is still open
    route(now=later(at, 2.1))
    [page] = deliveries()
    assert page.payload["count"] == 36 and len(page.payload["events"]) == 36
    assert page.payload["title"] == "FIRING: 36 events (critical) on cn001, cn002, cn003 and 33 more nodes"
    assert sorted(e["node"] for e in page.payload["events"]) == [k.split("/")[0] for k in keys]


def test_a_silence_stops_delivery_but_the_event_stays_open_and_visible(each_db, fab):
    channel()
    at = timezone.now()
    Silence.objects.create(
        node_glob="cn00*", reason="cable work", created_by_name="ops", created_at=at,
        starts_at=at - timedelta(minutes=1), ends_at=at + timedelta(minutes=30),
    )  # fmt: skip
    fab.open(at, "cn001/mlx5_0/1", "cn101/mlx5_0/1")
    route(now=later(at, 5))
    [page] = deliveries()
    assert page.keys == "down:cn101/mlx5_0/1"  # only the one outside the silence
    silenced = event("down:cn001/mlx5_0/1")
    assert silenced.is_open
    # Still silenced when it resolves: nothing is ever sent about it.
    fab.resolve(later(at, 60), "cn001/mlx5_0/1")
    route(now=later(at, 61))
    assert [d.keys for d in deliveries()] == ["down:cn101/mlx5_0/1"]
    assert Event.objects.get(key="down:cn001/mlx5_0/1").resolved_at is not None  # recorded all along


def test_an_event_still_open_when_its_silence_ends_is_sent_then(each_db, fab):
    channel()
    at = timezone.now()
    Silence.objects.create(
        reason="maintenance", created_by_name="ops", created_at=at, starts_at=at, ends_at=at + timedelta(minutes=10)
    )
    fab.open(at, "cn001/mlx5_0/1")
    route(now=later(at, 300))
    assert deliveries() == []
    route(now=later(at, 601))
    assert [d.reason for d in deliveries()] == ["firing"]


def test_unacknowledged_critical_events_repeat_until_acknowledged(each_db, fab):
    channel(repeat_s=600, severities=["critical", "warning"])
    at = timezone.now()
    fab.open(at, "cn001/mlx5_0/1")
    fab.open(at, "cn002/mlx5_0/1", kind="degraded", severity="warning")
    route(now=at)
    route(now=later(at, 599))
    assert [d.reason for d in deliveries()] == ["firing"]
    route(now=later(at, 601))
    repeats = deliveries("repeat")
    assert [d.keys for d in repeats] == ["down:cn001/mlx5_0/1"]  # warnings are not repeated
    assert repeats[0].payload["title"].startswith("STILL FIRING: cn001")
    Acknowledgement.objects.create(event=event("down:cn001/mlx5_0/1"), by_name="alice", at=later(at, 700))
    route(now=later(at, 1300))
    route(now=later(at, 5000))
    assert len(deliveries("repeat")) == 1
    # Acknowledged is not resolved: the resolution is still announced, and says who acknowledged.
    fab.resolve(later(at, 6000), "cn001/mlx5_0/1")
    route(now=later(at, 6001))
    [resolved] = deliveries("resolved")
    assert resolved.payload["events"][0]["acknowledged_by"] == "alice"


def test_an_event_that_bounces_within_the_flap_hold_is_one_thread(each_db, fab):
    channel(flap_hold_s=120)
    at = timezone.now()
    t = 0.0
    fab.open(at, "cn001/mlx5_0/1")
    route(now=at)
    for _ in range(5):  # resolves and reopens every 40 s
        t += 30
        fab.resolve(later(at, t), "cn001/mlx5_0/1")
        route(now=later(at, t + 1))
        t += 10
        fab.open(later(at, t), "cn001/mlx5_0/1")
        route(now=later(at, t + 1))
    assert [d.reason for d in deliveries()] == ["firing"]
    assert Thread.objects.get().bounces == 5
    fab.resolve(later(at, t + 30), "cn001/mlx5_0/1")
    route(now=later(at, t + 100))
    assert [d.reason for d in deliveries()] == ["firing"]  # within the hold: not yet
    route(now=later(at, t + 151))
    assert [d.reason for d in deliveries()] == ["firing", "resolved"]
    assert Event.objects.filter(key="down:cn001/mlx5_0/1").count() == 6  # every bounce is on the record


def test_a_leaf_that_loses_its_power_is_one_notification_that_names_the_switch(each_db, tmp_path):
    from tests.fabric.fabric_support import FabricWorld

    channel(group_s=30)
    w = FabricWorld(tmp_path / "sim")
    w.polls(2)
    w.sim.add_fault("leaf02:down")  # the hosts cabled to it see their ports go down at their next poll
    for number, port in w.builder.nodes["leaf02"].ports.items():
        if number and port.peer:
            w.builder.down("leaf02", number)
    w.poll()
    route(now=w.now + timedelta(seconds=31))
    [page] = deliveries()
    events = page.payload["events"]
    assert page.payload["title"].startswith(f"FIRING: {len(events)} events (critical) around switch leaf02: ")
    assert page.payload["title"].endswith("it lost power, or every cable at once")
    assert {e["switch"] for e in events} == {"leaf02"}
    kinds = sorted(e["kind"] for e in events)
    assert kinds == ["down"] * (len(events) - 1) + ["unreachable"] and len(events) >= 3
    assert all("↔ leaf02 port " in e["message"] for e in events if e["kind"] == "down")
