"""Covers fabricweb/beat.py, fabricweb/scheduling.py, fabricweb/health/tasks.py, fabricweb/telemetry/tasks.py.

Central scheduling: the beat schedule, the fan-out of polls and the lock of long jobs, on a real Redis."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from celery import shared_task
from celery.schedules import schedule as celery_interval
from django.conf import settings
from django.utils import timezone

from fabricweb import beat, scheduling
from fabricweb.celery import app, node_queue
from fabricweb.health import tasks as health_tasks
from fabricweb.inventory.models import Node
from fabricweb.telemetry import tasks as telemetry

needs_redis = pytest.mark.skipif(not os.environ.get("TEST_REDIS_URL"), reason="TEST_REDIS_URL is not set")


@shared_task(name="tests.pipeline.job")
def job() -> str:
    return "ran"


def test_every_periodic_job_expires_after_its_period():
    schedule = beat.beat_schedule(7.0)
    assert {type(e["schedule"]) for e in schedule.values()} == {beat.OnTheClock}
    assert {k: (e["schedule"].seconds, e["options"]["expires"]) for k, e in schedule.items()} == {
        "dispatch-collect": (7.0, 7.0),
        "check-stale": (7.0, 7.0),
        "rollup-samples": (300.0, 300.0),
        "prune-old": (3600.0, 3600.0),
        "retire-vanished": (3600.0, 3600.0),
        "alerts-tick": (5.0, 5.0),
    }
    assert schedule["check-stale"]["args"] == ["fabricweb.health.tasks.check_stale"]
    assert app.conf.beat_schedule == beat.beat_schedule(settings.FABRIC_POLL_INTERVAL)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _on_the_clock(every: float, now: list[float]) -> beat.OnTheClock:
    return beat.OnTheClock(timedelta(seconds=every), nowfun=lambda: _at(now[0]))


@pytest.mark.parametrize(
    ("last_run", "before", "due"),
    [
        # Run 0.4 s late, at ...100.4: due at ...110 all the same, not ...110.4; then at ...120.
        (100.4, (101.0, False, 9.0), (110.0, True, 10.0)),
        # The run due at ...100 ran 8 s late: ...110 is 2 s after it, so passed over; the next is ...120.
        (108.0, (110.0, False, 10.0), (120.5, True, 9.5)),
    ],
)
def test_a_late_run_leaves_the_next_one_on_the_clock_at_least_half_a_period_later(last_run, before, due):
    base = 1_000_000_000.0
    now = [base + before[0]]
    every = _on_the_clock(10, now)
    assert every.is_due(_at(base + last_run)) == before[1:]
    assert every.remaining_estimate(_at(base + last_run)) == timedelta(seconds=before[2])
    now[0] = base + due[0]
    assert every.is_due(_at(base + last_run)) == due[1:]


def test_runs_late_by_up_to_half_a_period_keep_one_run_a_period_where_celerys_interval_drifts():
    lateness = [0.05 * (i % 9) for i in range(600)]  # 0 to 0.4 s late, 0.2 s on average

    def mean_gap(make) -> float:
        now = [1_000_000_000.0]
        plan = make(now)
        runs, last = [], now[0]
        for late in lateness:
            # Beat sleeps until the run is due, and wakes up late.
            now[0] += max(0.0, plan.remaining_estimate(_at(last)).total_seconds()) + late
            assert plan.is_due(_at(last))[0]
            runs.append(now[0])
            last = now[0]
        return (runs[-1] - runs[0]) / (len(runs) - 1)

    def drifting(now: list[float]) -> celery_interval:
        return celery_interval(timedelta(seconds=1.0), nowfun=lambda: _at(now[0]))

    assert round(mean_gap(lambda now: _on_the_clock(1.0, now)), 3) == 1.0
    assert round(mean_gap(drifting), 3) == 1.2


def test_guarded_jobs_keep_their_own_time_limits():
    for task in (telemetry.rollup_samples, telemetry.prune_old, health_tasks.retire_vanished):
        assert beat.LIMITS[task.name] == (task.soft_time_limit, task.time_limit)
        options = next(e["options"] for e in beat.beat_schedule(10).values() if e.get("args") == [task.name])
        assert (options["soft_time_limit"], options["time_limit"]) == (task.soft_time_limit, task.time_limit)


@needs_redis
def test_an_exclusive_job_runs_unless_a_run_of_it_holds_the_lock():
    assert scheduling.run_exclusive.apply(args=[job.name]).get() == "ran"
    lock = scheduling.broker_redis(app.conf.broker_url).lock(f"fabricweb:lock:{job.name}", timeout=30)
    assert lock.acquire(blocking=False)
    try:
        assert scheduling.run_exclusive.apply(args=[job.name]).get() == {"skipped": "running"}
    finally:
        lock.release()
    assert scheduling.run_exclusive.apply(args=["tests.pipeline.nothing"]).get() == {"skipped": "not registered"}


@needs_redis
def test_dispatch_sends_one_expiring_collect_per_node_and_none_while_one_waits(each_db):
    names = [f"t{uuid.uuid4().hex[:10]}" for _ in range(3)]
    now = timezone.now()
    Node.objects.bulk_create(Node(name=n, first_seen_at=now) for n in names)
    client = scheduling.broker_redis(app.conf.broker_url)
    try:
        assert scheduling.dispatch_collect.apply().get() == {"sent": 3, "waiting": 0}
        for name in names:
            assert client.llen(node_queue(name)) == 1
            message = json.loads(client.lindex(node_queue(name), 0))
            assert message["headers"]["task"] == "fabricweb.agent.tasks.collect"
            assert message["headers"]["expires"] is not None
        client.delete(node_queue(names[0]))  # that node's worker took its poll
        assert scheduling.dispatch_collect.apply().get() == {"sent": 1, "waiting": 2}
        assert [client.llen(node_queue(n)) for n in names] == [1, 1, 1]
    finally:
        client.delete(*(node_queue(n) for n in names), *(f"_kombu.binding.{node_queue(n)}" for n in names))


@needs_redis
def test_dispatch_reaches_a_nodes_queue_after_the_broker_lost_its_bindings(each_db):
    """A broker restarted without its data has no bindings, while this process's kombu still holds them as
    declared, and the agents never bind their own queue (their broker user may not): a poll goes straight to
    the node's queue, never through a binding that may be gone."""
    names = [f"t{uuid.uuid4().hex[:10]}" for _ in range(2)]
    Node.objects.bulk_create(Node(name=n, first_seen_at=timezone.now()) for n in names)
    client = scheduling.broker_redis(app.conf.broker_url)
    bindings = [f"_kombu.binding.{node_queue(n)}" for n in names]
    try:
        assert scheduling.dispatch_collect.apply().get() == {"sent": 2, "waiting": 0}
        client.delete(*(node_queue(n) for n in names))  # the agents took their polls
        client.delete(*bindings, *(f"_kombu.binding_permanent.{node_queue(n)}" for n in names))  # the restart
        assert scheduling.dispatch_collect.apply().get() == {"sent": 2, "waiting": 0}
        assert [client.llen(node_queue(n)) for n in names] == [1, 1]
        assert client.llen("ae.undeliver") == 0  # kombu's queue for messages no binding routed
    finally:
        client.delete(*(node_queue(n) for n in names), *bindings)
        client.delete(*(f"_kombu.binding_permanent.{node_queue(n)}" for n in names))
