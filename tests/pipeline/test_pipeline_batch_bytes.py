"""Covers fabricweb/brokeracl.py, fabricweb/telemetry/intake/messages.py, fabricweb/telemetry/intake/readers.py,
fabricweb/telemetry/intake/redisread.py, fabricweb/cappedredis.py,
fabricweb/identity/management/commands/broker_acl.py.

What one batch of the ingest consumer may read from the broker, in bytes (telemetry/intake/redisread.py).

The attack: a node's ACL user pushes, in one MULTI (now refused it: fabricweb/brokeracl.py) or one pipelined
burst, messages just under the cap of the queue onto `snapshots`; the consumer read them all in one take and its
RSS grew by gigabytes. Now a
node's snapshot queues take node-sized messages only (sweeps have a queue and cap of their own), and a take
reads at most FABRIC_INGEST_BATCH_BYTES: the rest wait on their queue for the next batch. Real Redis (the
ACL file `broker_acl` writes), a real consumer process, real PostgreSQL.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest
import redis
from django.core.management import call_command

from fabricweb.brokeracl import node_password
from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.inventory.models import Node
from fabricweb.names import INGEST_SNAPSHOT, SWEEP_QUEUE
from fabricweb.telemetry.intake.messages import FABRIC, MAX_ENVELOPE_BYTES, MAX_SWEEP_ENVELOPE_BYTES
from fabricweb.telemetry.intake.readers import transport_options
from fabricweb.telemetry.intake.redisread import BatchReader
from tests.e2e.e2e_harness import REPO, SECRET, clean_env
from tests.fixture_trees import snapshot
from tests.loopback import redis_with_acl
from tests.pipeline.pipeline_support import needs_postgres, on_the_wire, padded_message, send

NODE_SECRET = "site-secret-for-batch-bytes-" + "b" * 40
CAP_SIZED = MAX_ENVELOPE_BYTES - 1  # the largest message a node's snapshot queue still reads


def cap_sized(message_id: str) -> bytes:
    """A kombu envelope of exactly CAP_SIZED bytes: a body no node sends (over its 6 MiB), read and dropped."""
    message = padded_message(INGEST_SNAPSHOT, message_id, CAP_SIZED)
    assert len(message) == CAP_SIZED
    return message


def test_a_take_reads_no_more_than_the_batch_bytes_and_leaves_the_rest_on_the_queue(broker):
    client = broker.redis
    client.lpush(SNAPSHOT_QUEUE, *(cap_sized(f"m{i}") for i in range(5)))
    reader = BatchReader(client, transport_options(60), "c1#1", batch_bytes=2 * MAX_ENVELOPE_BYTES + 1000)

    first = reader.take([SNAPSHOT_QUEUE], 100)
    assert [len(m.raw) for m in first] == [CAP_SIZED, CAP_SIZED]
    assert client.llen(SNAPSHOT_QUEUE) == 3
    # What it holds counts until acked: nothing more fits before then.
    assert reader.take([SNAPSHOT_QUEUE], 100) == []
    for message in first:
        message.ack()
    reader.commit_acks()
    assert len(reader.take([SNAPSHOT_QUEUE], 100)) == 2 and client.llen(SNAPSHOT_QUEUE) == 1


def test_small_messages_fill_a_batch_in_a_few_rounds(broker):
    send(broker, 150)
    reader = BatchReader(broker.redis, transport_options(60), "c1#1")
    assert len(reader.take([SNAPSHOT_QUEUE], 100)) == 100
    assert broker.redis.llen(SNAPSHOT_QUEUE) == 50


def test_a_waiting_sweep_is_taken_alone_between_batches_of_node_messages(broker):
    send(broker, 250)
    app.send_task(FABRIC, args=[{"collector": "fabric-a"}], queue=SWEEP_QUEUE, connection=broker.conn)
    reader = BatchReader(broker.redis, transport_options(60), "c1#1")
    queues = [SNAPSHOT_QUEUE, SWEEP_QUEUE]

    takes = [reader.take(queues, 100) for _ in range(3)]
    assert [[m.queue for m in take] for take in takes] == [
        [SNAPSHOT_QUEUE] * 100,
        [SWEEP_QUEUE],
        [SNAPSHOT_QUEUE] * 100,
    ]


def test_a_node_message_sized_like_a_sweep_is_drained_unread(broker):
    # 20 MB: a sweep's size, far past a node message's cap (about 8.5 MiB), within the sweeps' (about 112 MiB).
    assert MAX_ENVELOPE_BYTES < 20_000_000 < MAX_SWEEP_ENVELOPE_BYTES
    broker.redis.lpush(SNAPSHOT_QUEUE, b"x" * 20_000_000)
    client = redis.Redis.from_url(broker.url)
    from fabricweb.cappedredis import capped_parser

    narrow = redis.Redis.from_url(broker.url, parser_class=capped_parser(MAX_ENVELOPE_BYTES))
    reader = BatchReader(client, transport_options(60), "c1#1", narrow=narrow)
    (message,) = reader.take([SNAPSHOT_QUEUE], 100)
    assert message.oversized == 20_000_000 and reader.held_bytes < 1000


CONSUMER = """
import json, time
import django
django.setup()
from fabricweb.telemetry.intake.consumer import BatchConsumer

def kib(field):
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(field)).split()[1])

consumer = BatchConsumer(100, 0.2)
t = consumer.totals
deadline = time.monotonic() + 60
# Idle first, every module loaded and the broker connected: the baseline is a consumer at rest.
consumer.run(until=lambda: time.monotonic() > deadline - 58)
before = kib("VmRSS")
print(json.dumps({"ready": True}), flush=True)
consumer.run(until=lambda: (t["snapshots"] >= 1 and t["dropped"] >= %(flood)d) or time.monotonic() > deadline)
print(json.dumps({"before_kib": before, "peak_kib": kib("VmHWM"), "totals": dict(t)}), flush=True)
"""


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_a_nodes_acl_user_cannot_make_one_batch_read_more_than_its_bytes(postgres, tmp_path, settings):
    settings.FABRIC_NODE_KEY_SECRET = NODE_SECRET
    acl = io.StringIO()
    call_command("broker_acl", "cn001", stdout=acl)
    flood = 12  # x 8.5 MiB: ~102 MiB in one burst, all of which one take read before
    with redis_with_acl(tmp_path, acl.getvalue()) as (address, central_url):
        env = clean_env(DATABASE_URL=postgres, SECRET_KEY=SECRET, REDIS_URL=central_url, LOG_LEVEL="INFO")
        env.update(DJANGO_SETTINGS_MODULE="fabricweb.settings", FABRIC_INGEST_BATCH_BYTES=str(16 * 1024 * 1024))
        consumer = subprocess.Popen(
            [sys.executable, "-c", CONSUMER % {"flood": flood}],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert json.loads(consumer.stdout.readline()) == {"ready": True}, consumer.stderr.read()[-4000:]
            node = redis.Redis.from_url(f"redis://node.cn001:{node_password(NODE_SECRET, 'cn001')}@{address}/0")
            with pytest.raises(redis.exceptions.NoPermissionError):  # no transaction for a node's user
                node.execute_command("MULTI")
            with node.pipeline(transaction=False) as pipe:  # one burst: what the user may still send
                for i in range(flood):
                    pipe.lpush(SNAPSHOT_QUEUE, cap_sized(f"flood-{i}"))
                pipe.execute()
            with redis.Redis.from_url(central_url) as central:
                central_conn = app.connection_for_write(central_url)
                app.send_task(INGEST_SNAPSHOT, args=[on_the_wire(snapshot(host="cn002"))], queue=SNAPSHOT_QUEUE,
                              connection=central_conn)  # fmt: skip
                central_conn.release()
                out, err = consumer.communicate(timeout=120)
                left = central.llen(SNAPSHOT_QUEUE)
        finally:
            consumer.kill()
    report = json.loads(out.strip().splitlines()[-1])
    grew_mib = (report["peak_kib"] - report["before_kib"]) / 1024
    print(f"consumer: {flood} messages of {CAP_SIZED} bytes, peak RSS {grew_mib:.1f} MiB over its rest")
    assert report["totals"]["dropped"] == flood and report["totals"]["snapshots"] == 1, err[-4000:]
    # A batch of 16 MiB holds one such message at a time: its bytes, its body's copy, and what reading costs.
    assert grew_mib < 48, err[-4000:]
    assert left == 0 and Node.objects.filter(name="cn002").exists()
    time.sleep(0)
