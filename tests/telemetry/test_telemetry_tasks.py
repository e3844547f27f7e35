"""The Celery app (JSON only, routes) and the telemetry tasks."""

from __future__ import annotations

import json
import logging
import os
import pickle
import uuid

import pytest
from kombu.exceptions import ContentDisallowed
from kombu.serialization import loads
from support import later, snapshot

from fabricweb.celery import app, node_queue
from fabricweb.inventory.models import Node
from fabricweb.telemetry import samples, tasks


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
    for task in (tasks.ingest_snapshot, tasks.ingest_snapshots):
        assert route(task.name) == "snapshots"
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
    tasks.ingest_snapshot.apply_async(args=[snap], queue=queue)
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


def test_the_ingest_task_stores_a_snapshot(each_db):
    out = tasks.ingest_snapshot.apply(args=[snapshot()]).get()
    assert out == {"status": "stored", "node": "cn001", "samples": 4}
    assert len(list(samples.between())) == 4


def test_the_ingest_task_logs_a_rejected_snapshot_and_stores_nothing(each_db, caplog):
    bad = snapshot()
    bad["schema"] = 7
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.tasks"):
        out = tasks.ingest_snapshot.apply(args=[bad]).get()
    assert out == {"status": "rejected", "reason": "unknown schema version 7 (this server reads 1)"}
    assert "snapshot from cn001 rejected: unknown schema version 7" in caplog.text
    assert not Node.objects.exists()


def test_the_batch_task_stores_the_good_and_logs_the_bad(each_db, caplog):
    s0 = snapshot()
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.tasks"):
        out = tasks.ingest_snapshots.apply(args=[[s0, {"schema": 1}, later(s0, 10)]]).get()
    assert out == {"stored": 2, "rejected": 1, "samples": 8}
    assert "batch item 1" in caplog.text
