"""Covers fabricweb/beat.py, fabricweb/scheduling.py, fabricweb/health/tasks.py, fabricweb/telemetry/tasks.py.

Central scheduling: the beat schedule, the fan-out of polls and the lock of long jobs, on a real Redis."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from celery import shared_task
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
    assert {k: (e["schedule"], e["options"]["expires"]) for k, e in schedule.items()} == {
        "dispatch-collect": (7.0, 7.0),
        "check-stale": (7.0, 7.0),
        "rollup-samples": (300.0, 300.0),
        "prune-old": (3600.0, 3600.0),
        "retire-vanished": (3600.0, 3600.0),
        "alerts-tick": (5.0, 5.0),
    }
    assert schedule["check-stale"]["args"] == ["fabricweb.health.tasks.check_stale"]
    assert app.conf.beat_schedule == beat.beat_schedule(settings.FABRIC_POLL_INTERVAL)


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
