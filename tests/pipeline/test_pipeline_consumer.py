"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/intake/batchstore.py,
fabricweb/telemetry/intake/broker.py, fabricweb/telemetry/intake/consumer.py,
fabricweb/telemetry/intake/messages.py, fabricweb/telemetry/intake/redisread.py, fabricweb/telemetry/signals.py,
fabricweb/telemetry/management/commands/ingest.py; through them fabricweb/telemetry/intake/spend.py.

The batch consumer of the snapshots queue (`manage.py ingest`), on a real Redis and real databases.

Every test leases a Redis database of the test Redis (as the e2e tests do), or starts a
redis-server of its own, so parallel runs never share the `snapshots` queue. The data is committed for real
(transaction=True): acks must follow commits, and other processes read what was stored.
The consumer runs in the test's thread (so it uses the test's database connection), or as
`manage.py ingest` in a process of its own where killing or signalling it is the point.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path

import psycopg
import pytest
import redis
from django.db import IntegrityError, OperationalError, connections

from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.inventory.models import Node
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.intake.batchstore import MAX_ATTEMPTS
from fabricweb.telemetry.intake.broker import TRANSPORT, transport_for
from fabricweb.telemetry.intake.broker import Channel as BrokerChannel
from fabricweb.telemetry.intake.consumer import BatchConsumer
from fabricweb.telemetry.intake.messages import ONE
from fabricweb.telemetry.intake.redisread import taken_count
from fabricweb.telemetry.signals import snapshots_ingested
from harness import RedisServer, free_port, start_redis
from tests.e2e.e2e_harness import SECRET, Process, clean_env
from tests.fixture_trees import snapshot
from tests.loopback import silent_server
from tests.pipeline.pipeline_support import (
    PORTS,
    Broker,
    consume,
    needs_postgres,
    on_the_wire,
    polls,
    postgres_only,
    stored,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def transactions():
    """The size of every ingest transaction that stored something (snapshots_ingested: once per transaction)."""
    sizes: list[int] = []

    def receiver(sender, results, **kwargs):
        sizes.append(len(results))

    snapshots_ingested.connect(receiver, weak=False)
    yield sizes
    snapshots_ingested.disconnect(receiver)


def manage_ingest(tmp: Path, db_url: str, broker: Broker, *options: str) -> Process:
    env = clean_env(DATABASE_URL=db_url, SECRET_KEY=SECRET, REDIS_URL=broker.url, LOG_LEVEL="INFO")
    return Process([sys.executable, "manage.py", "ingest", *options], env, tmp / "ingest.log")


def test_snapshots_are_routed_to_the_snapshot_queue_and_maintenance_stays_on_ingest():
    def route(name: str) -> str:
        return app.amqp.router.route({}, name, args=(), kwargs={}, task_type=app.tasks.get(name))["queue"].name

    assert route(ONE) == SNAPSHOT_QUEUE
    assert route("fabricweb.telemetry.tasks.rollup_samples") == route("fabricweb.telemetry.tasks.prune_old") == "ingest"
    # Read by this consumer only: no Celery worker runs a snapshot.
    assert ONE not in app.tasks


def test_it_stores_a_burst_of_snapshots_in_few_transactions(each_db, broker, transactions):
    for snap in polls(8, 5):
        broker.send(ONE, snap)
    for snap in [{**s, "host": "cn009"} for s in polls(1, 2)]:
        broker.send(ONE, snapshot=snap)  # its argument by name, as Task.delay(snapshot=...) sends it

    consume(broker.url, lambda c: c.totals["snapshots"] >= 42, batch=25, max_wait=1.0)
    # A full batch of 25 messages at once, then the 17 left when the oldest had waited max_wait.
    assert transactions == [25, 17]
    assert stored() == {f"cn{n:03d}": (2 if n == 9 else 5) * PORTS for n in range(1, 10)}
    assert broker.left() == (0, 0)


def test_it_stores_the_good_snapshots_of_a_batch_and_logs_the_malformed_one(each_db, broker, transactions, caplog):
    good1, bad, good2 = polls(3, 1)
    bad["schema"] = 7
    for snap in (good1, bad, good2):
        broker.send(ONE, snap)
    broker.send(ONE, snapshot="not a snapshot")  # by name, as Task.delay(snapshot=...) sends it

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["batches"] >= 1)
    assert "snapshot from cn002 rejected: unknown schema version 7 (this server reads 1, 2)" in caplog.text
    assert "a snapshot from an agent that gives no name this server cannot read: a snapshot is a JSON object" in (
        caplog.text
    )
    assert consumer.totals["rejected"] == 1 and consumer.totals["dropped"] == 1 and transactions == [2]
    assert stored() == {"cn001": PORTS, "cn003": PORTS}
    assert broker.left() == (0, 0)  # rejected ones are acked: they would be rejected again


def test_a_snapshot_with_named_counters_is_refused_naming_the_upgrade(each_db, broker, caplog):
    # What agents sent before the wire form: the snapshot as `--format json` prints it. No site runs one.
    app.send_task(ONE, args=[snapshot(host="cn001")], queue=SNAPSHOT_QUEUE, connection=broker.conn)
    broker.send(ONE, snapshot(host="cn002"))
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] + c.totals["dropped"] >= 2)
    assert "a snapshot with named counters (schema 2), as agents before the wire form sent them" in caplog.text
    assert "this server reads wire 2 and 3 only (collectors/wire.py); upgrade the node's agent" in caplog.text
    assert consumer.totals["dropped"] == 1 and stored() == {"cn002": PORTS}
    assert broker.left() == (0, 0)


def test_it_drops_a_pickle_message_without_unpickling_it(each_db, broker, tmp_path, caplog):
    class Trap:
        """Unpickling it creates a file: the proof that something was unpickled."""

        def __init__(self, path: Path) -> None:
            self.path = str(path)

        def __reduce__(self):
            return (open, (self.path, "w"))

    pickle.loads(pickle.dumps(Trap(tmp_path / "armed")))  # the trap works...
    assert (tmp_path / "armed").exists()
    broker.publish(Trap(tmp_path / "sprung"), serializer="pickle", message_id="pickled-1")
    broker.send(ONE, snapshot())

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] >= 1)
    assert not (tmp_path / "sprung").exists()  # ...and the consumer never sprang it
    assert "dropped message pickled-1: content type 'application/x-python-serialize'" in caplog.text
    assert consumer.totals["dropped"] == 1 and stored() == {"cn001": PORTS}
    assert broker.left() == (0, 0)


def test_it_drops_other_tasks_and_bodies_of_the_wrong_shape_with_the_reason(each_db, broker, caplog):
    broker.send("fabricweb.telemetry.tasks.prune_old")
    broker.publish({"host": "cn001"}, serializer="json", message_id="no-envelope")
    broker.send(ONE, snapshot(), snapshot())
    broker.send("fabricweb.telemetry.tasks.ingest_snapshots", [snapshot()])  # a batch task no agent sends
    broker.send(ONE, snapshot(host="cn005"))

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] >= 1)
    assert "task 'fabricweb.telemetry.tasks.prune_old' is not an ingest task" in caplog.text
    assert "dropped message no-envelope: body is not [args, kwargs, embed]" in caplog.text
    assert f"{ONE} takes one argument, snapshot" in caplog.text
    assert "task 'fabricweb.telemetry.tasks.ingest_snapshots' is not an ingest task" in caplog.text
    assert consumer.totals["dropped"] == 4 and stored() == {"cn005": PORTS}
    assert broker.left() == (0, 0)


def test_a_message_whose_bytes_are_not_utf8_is_dropped_and_the_rest_stored(each_db, broker, caplog):
    broker.redis.lpush(SNAPSHOT_QUEUE, b'{"body": "\xff\xfe", "content-type": "application/json"}')
    broker.send(ONE, snapshot(host="cn008"))

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] >= 1)
    assert "content type 'invalid': only application/json is read" in caplog.text
    assert consumer.totals["dropped"] == 1 and stored() == {"cn008": PORTS}
    assert broker.left() == (0, 0)


def test_it_stores_bodies_sent_plain_and_in_base64_as_older_agents_send_them(each_db, broker, caplog):
    broker.send(ONE, snapshot(host="cn001"))  # this project's apps: the body as it is (PLAIN_BODIES)
    with app.connection_for_write(broker.url, transport_options={"body_encoding": "base64"}) as older:
        app.send_task(ONE, args=[on_the_wire(snapshot(host="cn002"))], queue=SNAPSHOT_QUEUE, connection=older)
    queued = [json.loads(raw) for raw in broker.redis.lrange(SNAPSHOT_QUEUE, 0, -1)]
    assert sorted(str(m["properties"]["body_encoding"]) for m in queued) == ["None", "base64"]
    broker.redis.lpush(  # claims base64, is not: dropped with the reason, the others stored
        SNAPSHOT_QUEUE,
        json.dumps(
            {
                "body": "{not base64}",
                "content-type": "application/json",
                "content-encoding": "utf-8",
                "headers": {"task": ONE, "id": "bad-base64"},
                "properties": {"body_encoding": "base64"},
            }
        ),
    )

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] + c.totals["dropped"] >= 3)
    assert stored() == {"cn001": PORTS, "cn002": PORTS}
    assert "dropped message bad-base64: undecodable body" in caplog.text
    assert consumer.totals["dropped"] == 1
    assert broker.left() == (0, 0)


def test_a_message_larger_than_any_node_sends_is_dropped_before_it_is_decoded(each_db, broker, caplog):
    huge = snapshot(host="cn006")
    # ~7 MB of JSON: past a node's body cap (6 MiB), within its queue's message cap (drained unread past that)
    huge["errors"] = [{"path": "x" * 1000, "reason": "y" * 500}] * 4_700
    broker.send(ONE, huge)
    broker.send(ONE, snapshot(host="cn007"))

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] >= 1)
    assert "bytes, more than the 6291456 a node's snapshots take" in caplog.text
    assert consumer.totals["dropped"] == 1 and stored() == {"cn007": PORTS}
    assert broker.left() == (0, 0)


def test_a_snapshot_that_makes_ingest_fail_is_dropped_and_the_rest_of_its_batch_stored(each_db, broker, caplog):
    def choke_on_cn002(sender, results, **kwargs):
        if any(r.node == "cn002" for r in results):
            raise ValueError("cannot judge cn002")  # not a database error: ingest_batch lets it through

    for snap in polls(3, 1):
        broker.send(ONE, snap)
    snapshots_ingested.connect(choke_on_cn002, weak=False)
    try:
        with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
            consumer = consume(broker.url, lambda c: c.totals["snapshots"] + c.totals["dropped"] >= 3)
    finally:
        snapshots_ingested.disconnect(choke_on_cn002)
    assert "a batch of 3 messages failed; storing them one by one" in caplog.text
    assert "ValueError: cannot judge cn002" in caplog.text and consumer.totals["dropped"] == 1
    assert stored() == {"cn001": PORTS, "cn003": PORTS}
    assert broker.left() == (0, 0)


def test_a_snapshot_that_fails_in_the_database_every_time_is_given_up_while_the_rest_is_stored(each_db, broker, caplog):
    def refuse_cn002(sender, results, **kwargs):
        if any(r.node == "cn002" for r in results):
            raise IntegrityError("cn002 violates a constraint")  # a database error, but not an outage

    for snap in polls(3, 1):
        broker.send(ONE, snap)
    snapshots_ingested.connect(refuse_cn002, weak=False)
    try:
        with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
            consumer = consume(broker.url, lambda c: c.totals["dropped"] >= 1)
    finally:
        snapshots_ingested.disconnect(refuse_cn002)
    assert "failed in the database 3 times while the database answered; dropped" in caplog.text
    assert consumer.totals["dropped"] == 1 and consumer.totals["snapshots"] == 2
    assert stored() == {"cn001": PORTS, "cn003": PORTS}
    assert broker.left() == (0, 0)


def test_it_reads_plain_redis_with_one_client_per_channel_and_other_brokers_as_they_are(broker):
    assert transport_for("redis://127.0.0.1:6379/0") == TRANSPORT
    for url in ("rediss://h:6380/0", "sentinel://h:26379", "memory://", "amqp://h//", ""):
        assert transport_for(url) is None
    with app.connection_for_read(broker.url, transport=TRANSPORT) as conn:
        channel = conn.default_channel
        assert isinstance(channel, BrokerChannel)
        assert channel._create_client() is channel._create_client()  # kombu's own builds one per pipeline
        assert channel._create_client(asynchronous=True) is not channel._create_client()
    for snap in polls(2, 1):
        broker.send(ONE, snap)
    consume(broker.url, lambda c: c.totals["snapshots"] >= 2)
    assert broker.left() == (0, 0)  # delivered, stored and acked through it


def test_a_database_busy_past_its_timeout_is_waited_out_not_counted_against_the_snapshots(each_db, broker, caplog):
    # The database refuses as many attempts as would give up a message that fails (1 + 2 + 4 s of backoff).
    busy = {"left": MAX_ATTEMPTS}

    def locked(sender, results, **kwargs):
        if busy["left"]:
            busy["left"] -= 1
            raise OperationalError("database is locked")

    for snap in polls(3, 1):
        broker.send(ONE, snap)
    snapshots_ingested.connect(locked, weak=False)
    try:
        with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
            consumer = consume(broker.url, lambda c: c.totals["snapshots"] >= 3, timeout=60)
    finally:
        snapshots_ingested.disconnect(locked)
    assert "database error (OperationalError: database is locked); 3 message(s) kept in hand" in caplog.text
    assert consumer.totals["dropped"] == 0 and consumer.totals["requeued"] == 0 and not consumer.failures
    assert stored() == {f"cn{n:03d}": PORTS for n in range(1, 4)}
    assert broker.left() == (0, 0)


def send_to(url: str, snap: dict) -> None:
    with app.connection_for_write(url) as conn:
        app.send_task(ONE, args=[on_the_wire(snap)], queue=SNAPSHOT_QUEUE, connection=conn)


@pytest.mark.skipif(not shutil.which("redis-server") and not os.environ.get("CI"), reason="no redis-server")
def test_it_reconnects_after_losing_the_broker_and_carries_on(tmp_path, caplog):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    restart = partial(start_redis, "--dir", str(tmp_path), port=port, cwd=tmp_path)
    send = partial(send_to, url)

    first, second = polls(1, 2)
    servers: list[RedisServer | None] = []

    def outage(consumer) -> bool:
        if consumer.totals["snapshots"] == 1 and len(servers) == 1:
            servers[0].stop()  # the broker goes away under a connected consumer...
            servers.append(None)
        elif servers[-1] is None and "lost the broker" in caplog.text:
            servers[-1] = restart()  # ...and comes back, empty
            send(second)
        return consumer.totals["snapshots"] >= 2

    try:
        servers.append(restart())
        send(first)
        with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
            consume(url, outage)
    finally:
        for server in filter(None, servers):
            server.stop()
    assert f"lost the broker {url} (" in caplog.text  # named as configured, whatever transport reads it
    assert f"connected to the broker {url} again" in caplog.text
    assert stored() == {"cn001": 2 * PORTS}


@pytest.mark.skipif(not shutil.which("redis-server") and not os.environ.get("CI"), reason="no redis-server")
def test_a_batch_in_hand_when_the_broker_went_away_is_read_again_first_once_it_is_back(tmp_path, caplog):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    # A broker that keeps its data across a restart: what the consumer had taken is still there.
    restart = partial(
        start_redis, "--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always", port=port, cwd=tmp_path
    )
    send = partial(send_to, url)

    first, second = polls(1, 2)
    servers: list[RedisServer | None] = []
    back_at = []

    def stop_once_taken() -> None:
        """The broker goes away while the consumer holds the first poll (taken, waiting for max_wait)..."""
        client, deadline = redis.Redis.from_url(url), time.monotonic() + 10
        while time.monotonic() < deadline and taken_count(client) < 1:
            time.sleep(0.01)
        servers[0].stop()
        servers.append(None)

    def back(consumer) -> bool:
        if len(servers) == 2 and servers[-1] is None and "lost the broker" in caplog.text:
            servers[-1] = restart()  # ...and comes back with it, still taken
            send(second)
            back_at.append(time.monotonic())
        return consumer.totals["snapshots"] >= 2

    try:
        servers.append(restart())
        send(first)
        watcher = threading.Thread(target=stop_once_taken)
        watcher.start()
        with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
            consumer = consume(url, back, max_wait=3.0, timeout=30)
        watcher.join()
        took = time.monotonic() - back_at[0]
        left = redis.Redis.from_url(url)
        assert (left.llen(SNAPSHOT_QUEUE), taken_count(left)) == (0, 0)
    finally:
        for server in filter(None, servers):
            server.stop()
    # Not after redeliver_after (60 s): at once, before the poll sent after it, so neither is stale.
    assert consumer.totals["snapshots"] == 2 and took < 10
    assert stored() == {"cn001": 2 * PORTS}


@needs_postgres
@postgres_only
def test_a_database_outage_keeps_the_batch_in_hand_and_stores_it_before_the_polls_queued_meanwhile(
    postgres, broker, caplog
):
    name = connections["postgres"].settings_dict["NAME"]
    admin = psycopg.connect(os.environ["TEST_POSTGRES_URL"], autocommit=True)
    away, back = f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false', f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'
    first_polls = polls(5, 2)
    older, newer = first_polls[:5], first_polls[5:]
    for snap in older:
        broker.send(ONE, snap)
    consumer = BatchConsumer(5, 0.2, broker_url=broker.url)

    def outage() -> None:
        """Once the batch is held: the nodes' next polls queue up behind it, then the database is back."""
        deadline = time.monotonic() + 20
        while consumer.totals["held"] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        for snap in newer:
            broker.send(ONE, snap)
        admin.execute(back)

    try:
        # Nobody may connect, and whoever was connected (this test's own connection) is cut off.
        admin.execute(away)
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        helper = threading.Thread(target=outage, daemon=True)
        helper.start()
        deadline = time.monotonic() + 40
        with caplog.at_level(logging.ERROR, logger="fabricweb.telemetry.intake.consumer"):
            consumer.run(until=lambda: consumer.totals["snapshots"] >= 10 or time.monotonic() > deadline)
        helper.join(5)
    finally:
        admin.execute(back)
        admin.close()
    assert "ingest: database error (OperationalError" in caplog.text
    assert "5 message(s) kept in hand, trying again in 1 s" in caplog.text
    assert consumer.totals["held"] >= 5 and consumer.totals["requeued"] == 0
    # Both polls of every node stored: the older ones first, so none of them was stale.
    assert stored() == {f"cn{n:03d}": 2 * PORTS for n in range(1, 6)}
    assert broker.left() == (0, 0)


def holding_six(tmp_path, postgres, broker):
    """`manage.py ingest` holding 6 delivered messages unstored (its batch waits up to 60 s for more)."""
    for snap in polls(3, 2):
        broker.send(ONE, snap)
    ingest = manage_ingest(tmp_path, postgres, broker, "--max-wait", "60", "--redeliver-after", "120")
    try:
        ingest.wait_for("all 6 messages in the consumer's hands", lambda: broker.left() == (0, 6))
    except BaseException:
        ingest.kill_all()
        raise
    return ingest


@needs_postgres
@postgres_only
def test_sigterm_makes_manage_py_ingest_finish_the_batch_in_hand_and_exit_0(postgres, broker, tmp_path):
    ingest = holding_six(tmp_path, postgres, broker)
    try:
        assert not Node.objects.exists()  # not stored yet: the batch waits for more
        sent = time.monotonic()
        assert ingest.stop(signal.SIGTERM, timeout=10) == 0, ingest.tail()
    finally:
        ingest.kill_all()
    assert time.monotonic() - sent < 5
    assert stored() == {f"cn{n:03d}": 2 * PORTS for n in range(1, 4)}
    assert broker.left() == (0, 0)


@needs_postgres
@postgres_only
def test_a_consumer_killed_mid_batch_has_its_batch_stored_by_the_next_within_redeliver_after(
    postgres, broker, tmp_path
):
    ingest = holding_six(tmp_path, postgres, broker)
    try:
        assert ingest.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        ingest.kill_all()
    # Not acked before a commit, so still at the broker: nothing stored, nothing lost.
    assert broker.left() == (0, 6) and not Node.objects.exists()
    # The Celery workers' own unacked set is not where they are: no worker takes them back early.
    assert broker.redis.hlen("unacked") == 0

    killed_at = time.monotonic()
    again = manage_ingest(tmp_path, postgres, broker, "--redeliver-after", "3")
    try:
        again.wait_for("the 6 snapshots stored", lambda: len(list(samples.between())) == 6 * PORTS)
        took = time.monotonic() - killed_at
        assert again.stop(signal.SIGTERM, timeout=10) == 0, again.tail()
    finally:
        again.kill_all()
    print(f"consumer killed mid-batch: its 6 messages stored {took:.1f} s later (redeliver-after 3 s)")
    assert 3 <= took < 15
    # Each exactly once: no sample lost, none doubled.
    assert stored() == {f"cn{n:03d}": 2 * PORTS for n in range(1, 4)}
    assert broker.left() == (0, 0)


@needs_postgres
@postgres_only
def test_sigterm_stops_the_consumer_within_its_grace_while_the_broker_hangs(postgres, tmp_path):
    with silent_server() as port:
        ingest = manage_ingest(tmp_path, postgres, Broker(f"redis://127.0.0.1:{port}/0", None, None))
        try:
            # Started (however long Django takes on a loaded machine), connected, and waiting on a broker
            # that never answers: its first call timed out, and it is trying again.
            ingest.wait_for("the consumer waiting on the broker", lambda: "lost the broker" in ingest.tail())
            time.sleep(1.5)  # past its 1 s backoff: blocked in the next call to the silent broker
            assert ingest.proc.poll() is None, ingest.tail()
            sent = time.monotonic()
            status = ingest.stop(signal.SIGTERM, timeout=15)
        finally:
            ingest.kill_all()
    stopped_s = time.monotonic() - sent
    print(f"broker stalled: SIGTERM stopped the consumer in {stopped_s:.1f} s")
    assert stopped_s < 10, ingest.tail()  # runfabric and compose wait 10 s before SIGKILL
    assert status == 0, ingest.tail()
