"""Covers fabricweb/telemetry/tasks.py.

The Celery app (JSON only, routes) and how a snapshot travels: a task message by name, as JSON."""

from __future__ import annotations

import json
import os
import pickle
import uuid

import pytest
from kombu.exceptions import ContentDisallowed
from kombu.serialization import loads

from fabricweb.celery import app, node_queue
from fabricweb.names import INGEST_SNAPSHOT
from fabricweb.telemetry import tasks
from tests.telemetry.telemetry_support import snapshot


def route(name: str, **kwargs) -> str:
    return app.amqp.router.route({}, name, args=(), kwargs=kwargs, task_type=app.tasks.get(name))["queue"].name


def test_the_app_speaks_json_only():
    conf = app.conf
    assert (conf.task_serializer, conf.result_serializer) == ("json", "json")
    assert list(conf.accept_content) == ["json"]
    assert conf.task_acks_late and conf.worker_prefetch_multiplier == 1
    assert conf.task_time_limit > conf.task_soft_time_limit > 0


def test_a_pickled_message_is_refused():
    with pytest.raises(ContentDisallowed):
        loads(pickle.dumps({"x": 1}), "application/x-python-serialize", "binary", accept=app.conf.accept_content)


def test_snapshots_go_to_the_snapshot_queue_other_telemetry_tasks_to_ingest_and_the_tick_to_alerts():
    assert route(INGEST_SNAPSHOT) == "snapshots"
    for task in (tasks.rollup_samples, tasks.prune_old):
        assert route(task.name) == "ingest"
    assert route("fabricweb.alerts.tasks.tick") == "alerts"
    # `collect` is sent to its node's queue by dispatch, by name; no route guesses it.
    assert node_queue("cn042") == "node.cn042"


@pytest.mark.skipif(not os.environ.get("TEST_REDIS_URL"), reason="TEST_REDIS_URL is not set")
def test_a_snapshot_travels_through_redis_as_json():
    import redis

    queue = f"test-ingest-{uuid.uuid4().hex[:8]}"
    snap = snapshot()
    app.send_task(INGEST_SNAPSHOT, args=[snap], queue=queue)
    client = redis.Redis.from_url(os.environ["TEST_REDIS_URL"])
    try:
        raw = client.lpop(queue)
    finally:
        client.delete(queue)
    message = json.loads(raw)  # kombu's Redis transport: a JSON envelope, the body in it as text (PLAIN_BODIES)
    assert message["content-type"] == "application/json"
    assert message["properties"]["body_encoding"] is None
    args, kwargs, _ = json.loads(message["body"])  # the JSON text itself, not base64
    assert args == [snap] and kwargs == {}
