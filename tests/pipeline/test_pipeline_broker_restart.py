"""Covers fabricweb/cappedredis.py.

A central Celery worker consumes again after Redis restarts under it mid-task. The worker (as runfabric starts
the ingest worker: one process, late acknowledgement, prefetch 1) runs a task while Redis stops; the task ends
while Redis is down, so its ack fails. kombu's QoS kept that message's prefetch slot after the failed ack: the
worker never asked Redis for another message, and nothing made it reconnect, so it took no task again while its
queue filled (a fabric whose nodes all went stale after a Redis blip). Real redis-server, real worker.
"""

from __future__ import annotations

import sys
import time
import uuid

import redis

from fabricweb.celery import INGEST_QUEUE, app
from fabricweb.names import EXCLUSIVE
from harness import start_redis
from tests.e2e.e2e_harness import SECRET, Process, clean_env
from tests.pipeline.slow_task_support import SLOW

TASK_S = 1.5  # long enough to stop Redis under it


def send(url: str, task: str, *args) -> None:
    with app.connection_for_write(url) as conn:
        app.send_task(task, args=list(args), queue=INGEST_QUEUE, connection=conn, retry=True)


def test_a_worker_whose_ack_failed_while_redis_was_down_consumes_again_once_redis_is_back(tmp_path):
    broker = start_redis()
    env = clean_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", SECRET_KEY=SECRET, REDIS_URL=broker.url)
    argv = [sys.executable, "-m", "celery", "-A", "fabricweb", "worker", "-I", "tests.pipeline.slow_task_support"]
    argv += ["-Q", INGEST_QUEUE, "-n", "ingest@%h", "-c", "1", "--without-gossip", "--without-mingle"]
    worker = Process([*argv, "--without-heartbeat", "--loglevel", "INFO"], env, tmp_path / "worker.log")

    def log() -> str:
        return worker.log.read_text(errors="replace")

    try:
        worker.wait_for("the worker ready", lambda: " ready." in log(), 60)
        send(broker.url, SLOW, TASK_S)
        worker.wait_for("the slow task running", lambda: f"{SLOW}[" in log() and " received" in log())
        broker.stop()
        worker.wait_for("its ack failing, Redis down", lambda: "Couldn't ack" in log(), 2 * TASK_S + 10)
        broker = start_redis(port=broker.port)
        marker = f"after-the-restart-{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        send(broker.url, EXCLUSIVE, marker)  # an unregistered name: run_exclusive logs it and returns
        worker.wait_for("the task sent after the restart taken", lambda: marker in log(), 30)
        print(f"worker took a task {time.monotonic() - started:.1f} s after Redis came back")
        assert redis.Redis.from_url(broker.url).llen(INGEST_QUEUE) == 0
    finally:
        worker.stop()
        broker.stop()
