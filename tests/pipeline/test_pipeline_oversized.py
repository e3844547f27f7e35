"""Covers fabricweb/cappedredis.py, fabricweb/telemetry/history/samples.py.

Oversized messages on the central queues are drained unread and dropped (fabricweb/cappedredis.py).

Any node can push to `snapshots` and `ingest`. A 143 MB message is dropped by the process reading the
queue without ever being held: its peak RSS (VmHWM, read from /proc by the reading process itself, a
process of its own) grows by less than 100 MB, the messages after it are read, and the drop is logged
with the queue and the size, and counted. Real Redis (a leased database), real PostgreSQL, a real
consumer and a real Celery worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

from fabricweb.cappedredis import Oversized, capped_parser
from fabricweb.celery import INGEST_QUEUE, SNAPSHOT_QUEUE, app
from fabricweb.inventory.models import Node
from fabricweb.names import INGEST_SNAPSHOT, ROLLUP
from fabricweb.telemetry.history import samples
from tests.e2e.e2e_harness import REPO, SECRET, Process, clean_env
from tests.fixture_trees import snapshot
from tests.pipeline.pipeline_support import needs_postgres, padded_message

HUGE = 143_000_000
MAX_GROWTH_KIB = 100 * 1024
PORTS = 4  # ports in the fixture tree's snapshot: one sample each per poll


def huge_message(task: str, message_id: str) -> bytes:
    """A kombu envelope as a node could push it with LPUSH: 143 MB of body."""
    return padded_message(task, message_id, HUGE)


def test_a_capped_connection_drains_a_string_over_its_cap_and_reads_the_rest_of_the_reply(broker):
    broker.redis.lpush("q", b"a" * 10, b"b" * 300_000, b"c" * 10, b"d" * 1000, b"e" * 1001)
    client = redis.Redis.from_url(broker.url, parser_class=capped_parser(1000))
    with client.pipeline() as pipe:  # in MULTI/EXEC, as the consumer takes a batch
        for _ in range(5):
            pipe.lmove("q", "taken", "RIGHT", "LEFT")
        moved = pipe.execute()
    sizes = [m.size if isinstance(m, Oversized) else len(m) for m in moved]
    assert sizes == [10, 300_000, 10, 1000, 1001]
    assert [isinstance(m, Oversized) for m in moved] == [False, True, False, False, True]
    assert not moved[1]  # falsy: kombu's "if item:" skips it
    # The connection is in step: the next replies are read as they are.
    assert client.lrange("taken", 1, 1) == [b"d" * 1000] and client.ping() is True


CONSUMER = """
import json, os, sys, time
import django
django.setup()
from fabricweb.telemetry.intake.consumer import BatchConsumer

def hwm():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1])

before = hwm()
consumer = BatchConsumer(100, 0.2)
deadline = time.monotonic() + 20
t = consumer.totals
consumer.run(until=lambda: (t["snapshots"] >= 3 and t["dropped"] >= 1) or time.monotonic() > deadline)
print(json.dumps({"before_kib": before, "after_kib": hwm(), "totals": dict(t)}))
"""


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_the_ingest_consumer_drops_a_143_mb_snapshot_message_unread_and_stores_those_after_it(postgres, broker):
    broker.send(INGEST_SNAPSHOT, snapshot(host="cn001"))
    broker.redis.lpush(SNAPSHOT_QUEUE, huge_message(INGEST_SNAPSHOT, "huge"))
    broker.send(INGEST_SNAPSHOT, snapshot(host="cn002"))
    broker.send(INGEST_SNAPSHOT, snapshot(host="cn003"))

    env = clean_env(DATABASE_URL=postgres, SECRET_KEY=SECRET, REDIS_URL=broker.url, LOG_LEVEL="INFO")
    env["DJANGO_SETTINGS_MODULE"] = "fabricweb.settings"
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", CONSUMER], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    grew = report["after_kib"] - report["before_kib"]
    print(f"consumer: 143 MB message dropped in a {took:.1f} s run, peak RSS grew {grew / 1024:.1f} MiB")

    assert report["totals"]["dropped"] == 1 and report["totals"]["snapshots"] == 3, run.stderr[-4000:]
    assert f": {HUGE} bytes on queue snapshots, more than the 8873574 bytes a message there may take" in run.stderr
    assert grew < MAX_GROWTH_KIB
    stored = {n.name: len(list(samples.between(nodes=[n]))) for n in Node.objects.all()}
    assert stored == {"cn001": PORTS, "cn002": PORTS, "cn003": PORTS}
    assert broker.left() == (0, 0)  # acked: nothing left to deliver again


def vm_hwm_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_the_ingest_worker_drops_a_143_mb_task_message_unread_and_runs_those_after_it(postgres, broker, tmp_path):
    env = clean_env(DATABASE_URL=postgres, SECRET_KEY=SECRET, REDIS_URL=broker.url, LOG_LEVEL="INFO")
    argv = [sys.executable, "-m", "celery", "-A", "fabricweb", "worker", "-Q", INGEST_QUEUE, "-c", "1"]
    quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"]
    worker = Process([*argv, *quiet], env, tmp_path / "worker.log")
    try:
        worker.wait_for("the worker ready", lambda: " ready." in worker.log.read_text(errors="replace"))
        before = vm_hwm_kib(worker.proc.pid)  # the main process: the one that reads the queue (BRPOP)
        ids = [str(uuid.uuid4()) for _ in range(3)]
        app.send_task(ROLLUP, task_id=ids[0], queue=INGEST_QUEUE, connection=broker.conn)
        broker.redis.lpush(INGEST_QUEUE, huge_message(ROLLUP, "huge"))
        for task_id in ids[1:]:
            app.send_task(ROLLUP, task_id=task_id, queue=INGEST_QUEUE, connection=broker.conn)

        def done() -> bool:
            log = worker.log.read_text(errors="replace")
            return all(f"{ROLLUP}[{task_id}] succeeded" in log for task_id in ids)

        worker.wait_for("the three rollups run", done)
        grew = vm_hwm_kib(worker.proc.pid) - before
        log = worker.log.read_text(errors="replace")
    finally:
        worker.stop()
    print(f"worker: 143 MB message dropped, peak RSS of the main process grew {grew / 1024:.1f} MiB")
    assert f"dropped a message of {HUGE} bytes on queue ingest, over the cap of 1048576 bytes" in log
    assert "(1 dropped from ingest since start)" in log
    assert grew < MAX_GROWTH_KIB
    assert broker.redis.llen(INGEST_QUEUE) == 0  # removed, not delivered again
