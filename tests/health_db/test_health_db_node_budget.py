"""Covers fabricweb/health/records/retire.py, fabricweb/telemetry/results.py, fabricweb/telemetry/storage/budget.py,
fabricweb/telemetry/storage/apply.py.

One rogue host, with its own valid key, cannot stall ingest or flood the events: its cost is bounded
(fabricweb/telemetry/storage/budget.py), vanished ports are judged once, and they retire."""

from __future__ import annotations

import time
from datetime import timedelta

import orjson

from fabricweb.health.models import Event
from fabricweb.health.records.retire import retire_vanished
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.ingest import ingest_batch
from fabricweb.telemetry.results import REFUSED, STORED
from tests.health_db.health_db_fabric import STEP, open_events

ROGUE = "cn004"


def churned(snap: dict, round_no: int, devices: int = 4, ports: int = 128) -> dict:
    """`snap` with its devices replaced by `devices` new ones of `ports` ACTIVE ports each, named anew each round:
    valid, within the snapshot caps, and nothing a real host does."""
    out = {**snap, "devices": []}
    model = orjson.dumps(snap["devices"][0])  # copies made from JSON: copy.deepcopy took seconds a test
    port = orjson.dumps(snap["devices"][0]["ports"][0])
    for d in range(devices):
        device = orjson.loads(model)
        device["name"] = f"mlx5_r{round_no}_{d}"
        device["ports"] = [dict(orjson.loads(port), port=n) for n in range(1, ports + 1)]
        out["devices"].append(device)
    return out


def test_a_host_sending_hundreds_of_new_ports_each_poll_is_refused_and_delays_no_other_node(each_db, fabric):
    fabric.polls(3)
    others = [n for n in fabric.nodes if n != ROGUE]
    ports_before = Port.objects.filter(device__node__name=ROGUE).count()
    events_before = set(open_events())

    slowest = 0.0
    for round_no in range(40):
        fabric.sim.step(STEP)
        snaps = [fabric.snapshot(n) for n in others]
        snaps.append(churned(fabric.snapshot(ROGUE), round_no))
        started = time.perf_counter()
        out = ingest_batch(snaps, now=fabric.now)
        slowest = max(slowest, time.perf_counter() - started)
        assert not out.rejected
        statuses = {r.node: r.status for r in out.results}
        assert statuses == {**dict.fromkeys(others, STORED), ROGUE: REFUSED}

    # Every other node's poll was stored at its own time, each batch well within one poll interval.
    for node in Node.objects.filter(name__in=others):
        assert node.last_collected_at == fabric.now
    assert slowest < STEP
    rogue = Node.objects.get(name=ROGUE)
    assert rogue.refused_reason == (
        "snapshot would add 512 ports after 2 in the last hour: more than the 64 a node may add per hour "
        "(FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR)"
    )
    assert rogue.refused_snapshots == 40
    assert rogue.refused_at == fabric.now
    # Nothing of it was stored: no port rows, no event anywhere.
    assert Port.objects.filter(device__node__name=ROGUE).count() == ports_before
    assert set(open_events()) == events_before

    # Back to its real self: stored again; the refusals stay counted.
    fabric.poll(batch=True)
    rogue.refresh_from_db()
    assert (rogue.refused_reason, rogue.refused_snapshots, rogue.last_collected_at) == ("", 40, fabric.now)


def test_a_host_whose_ports_keep_vanishing_is_refused_past_its_vanished_ports(each_db, fabric, settings):
    settings.FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR = 10_000  # only the vanished bound in play
    settings.FABRIC_NODE_MAX_VANISHED_PORTS = 20
    fabric.polls(1)
    results = []
    for round_no in range(4):  # 8 new ports a poll; the 8 before vanish, and its own 2 with the first
        fabric.sim.step(STEP)
        snap = churned(fabric.snapshot(ROGUE), round_no, devices=1, ports=8)
        results.append(ingest_batch([snap], now=fabric.now).results[0])
    assert [r.status for r in results] == [STORED, STORED, STORED, REFUSED]
    assert results[3].note == (
        "snapshot would leave 26 ports vanished: more than the 20 a node may keep until they retire "
        "(FABRIC_NODE_MAX_VANISHED_PORTS)"
    )
    assert Node.objects.get(name=ROGUE).refused_reason == results[3].note


def test_a_vanished_device_is_judged_once_and_never_rewritten_while_it_stays_gone(each_db, fabric):
    fabric.polls(2)
    fabric.fault("cn003/mlx5_1:vanish")
    fabric.poll()
    event = open_events()["vanished:cn003/mlx5_1"]
    device = Device.objects.get(node__name="cn003", name="mlx5_1")
    assert device.missed_polls == 1

    fabric.polls(5)
    device.refresh_from_db()
    assert device.missed_polls == 1  # not counted, written or judged again
    assert set(Port.objects.filter(device=device).values_list("missed_polls", flat=True)) == {1}
    again = open_events()["vanished:cn003/mlx5_1"]
    assert (again.pk, again.updated_at, again.message) == (event.pk, event.updated_at, event.message)


def test_a_vanished_device_retires_after_the_stated_time_with_its_event_resolved_and_kept(each_db, fabric, settings):
    settings.FABRIC_VANISHED_RETIRE_AFTER = 7 * 86400.0
    fabric.polls(2)
    fabric.fault("cn003/mlx5_1:vanish")
    fabric.poll()
    vanished_at = fabric.now
    event = open_events()["vanished:cn003/mlx5_1"]

    assert retire_vanished(now=vanished_at + timedelta(days=6)).devices == 0
    report = retire_vanished(now=vanished_at + timedelta(days=7))
    assert (report.devices, report.ports, report.resolved) == (1, 1, 1)
    assert not Device.objects.filter(node__name="cn003", name="mlx5_1").exists()
    kept = Event.objects.get(pk=event.pk)
    assert kept.resolved_at == vanished_at + timedelta(days=7)
    assert kept.reason == "retired: vanished more than 7 d ago"
    assert (kept.node.name, kept.device_id, kept.port_id, kept.message) == ("cn003", None, None, event.message)

    fabric.poll()  # the node goes on: its retired device is not judged again, nor counted in its budget
    assert "vanished:cn003/mlx5_1" not in open_events()
    assert Node.objects.get(name="cn003").last_collected_at == fabric.now


def test_a_node_holds_at_most_its_bound_of_open_events_the_most_severe_first(each_db, fabric, settings, caplog):
    settings.FABRIC_NODE_MAX_OPEN_EVENTS = 1
    fabric.polls(2)
    fabric.fault("cn001/mlx5_0/1:symbol-errors=2", "cn003/mlx5_0/1:down", "cn003/mlx5_1/1:symbol-errors=2")
    fabric.poll()
    opened = {key: e.severity for key, e in open_events().items()}
    # cn001 has room for its one; cn003 opens its critical one, its warning waits.
    assert opened == {
        "symbol_errors:cn001/mlx5_0/1": "warning",
        "down:cn003/mlx5_0/1": "critical",
    }
    assert "cn003 holds its bound of open events (FABRIC_NODE_MAX_OPEN_EVENTS=1): 1 more not opened" in caplog.text

    fabric.clear("cn003/mlx5_0/1:down")
    fabric.polls(4)  # the critical one resolves after 3 clean polls: room for the warning, still true
    assert set(open_events()) == {"symbol_errors:cn001/mlx5_0/1", "symbol_errors:cn003/mlx5_1/1"}
