"""Covers fabricweb/telemetry/intake/readers.py, fabricweb/telemetry/intake/redisread.py,
fabricweb/telemetry/intake/shards.py.

How `manage.py ingest` takes snapshot messages on plain Redis (telemetry/intake/redisread.py), on the test Redis.

Messages are moved, not copied, from their queue to a list of the reader's own, and leave it
only at the ack (trimmed after the commit) or when given back to the head of their queue:
never on neither, never lost, the queue's order kept.
"""

from __future__ import annotations

import json
import time

import pytest

from fabricweb.celery import SNAPSHOT_QUEUE
from fabricweb.names import shard_queue
from fabricweb.telemetry.intake.readers import TakingReader, transport_options
from fabricweb.telemetry.intake.redisread import TAKERS_KEY, BatchReader, give_back, taken_count, taken_key
from fabricweb.telemetry.intake.shards import backlog
from tests.pipeline.pipeline_support import send


@pytest.fixture
def client(broker):
    return broker.redis


def reader(client, taker: str = "c1#1") -> BatchReader:
    return BatchReader(client, transport_options(60), taker)


def collected(message) -> str:
    return json.loads(message.body)[0][0]["collected_at"]


def test_it_takes_the_oldest_messages_by_moving_them_and_the_acks_trim_them_off(broker, client):
    sent = send(broker, 5)
    one = reader(client)
    taken = one.take([SNAPSHOT_QUEUE], 3)
    assert [collected(m) for m in taken] == sent[:3]
    assert client.llen(SNAPSHOT_QUEUE) == 2 and client.llen(taken_key("c1#1", SNAPSHOT_QUEUE)) == 3
    assert client.zscore(TAKERS_KEY, "c1#1") == pytest.approx(time.time(), abs=5)
    assert backlog(client, 1) == 5  # taken is not stored yet
    for message in taken:
        message.ack()
    one.commit_acks()
    assert not client.exists(taken_key("c1#1", SNAPSHOT_QUEUE))
    assert [collected(m) for m in one.take([SNAPSHOT_QUEUE], 10)] == sent[3:]
    assert backlog(client, 1) == 2


def test_it_takes_from_the_first_queues_first_up_to_the_batch(broker, client):
    first, second = shard_queue(0), shard_queue(1)
    on_first, on_second = send(broker, 2, first), send(broker, 3, second, first=2)
    taken = reader(client).take([first, second], 4)
    assert [(m.queue, collected(m)) for m in taken] == [(first, t) for t in on_first] + [
        (second, t) for t in on_second[:2]
    ]
    assert client.llen(second) == 1 and taken_count(client) == 4


def test_an_ack_out_of_order_is_trimmed_once_the_older_ones_are_acked(broker, client):
    sent = send(broker, 3)
    one = reader(client)
    m1, m2, m3 = one.take([SNAPSHOT_QUEUE], 3)
    m2.ack()  # e.g. a message dropped as it arrived, while the older ones wait for their commit
    one.commit_acks()
    assert client.llen(taken_key("c1#1", SNAPSHOT_QUEUE)) == 3
    m1.ack()
    one.commit_acks()
    assert client.lrange(taken_key("c1#1", SNAPSHOT_QUEUE), 0, -1) == [m3.raw]
    assert collected(m3) == sent[2]


def test_a_requeued_message_goes_behind_what_waits_and_off_the_readers_list(broker, client):
    sent = send(broker, 3)
    one = reader(client)
    m1, m2 = one.take([SNAPSHOT_QUEUE], 2)
    m1.requeue()
    assert client.lrange(taken_key("c1#1", SNAPSHOT_QUEUE), 0, -1) == [m2.raw]
    m2.ack()
    one.commit_acks()
    assert [collected(m) for m in one.take([SNAPSHOT_QUEUE], 10)] == [sent[2], sent[0]]


def test_a_taker_unseen_past_redeliver_after_has_its_messages_put_back_first_marked_redelivered(broker, client):
    sent = send(broker, 3)
    dead = reader(client, "gone#1")
    assert len(dead.take([SNAPSHOT_QUEUE], 2)) == 2
    other = reader(client, "c2#1")
    assert other.restore_older_than(60) == 0  # seen just now: alive
    assert taken_count(client) == 2
    time.sleep(0.3)
    assert other.restore_older_than(0.2) == 2
    assert client.zscore(TAKERS_KEY, "gone#1") is None and taken_count(client) == 0
    again = other.take([SNAPSHOT_QUEUE], 10)
    assert [collected(m) for m in again] == sent
    assert [bool(m.headers.get("redelivered")) for m in again] == [True, True, False]


def test_a_reader_whose_messages_were_given_back_while_it_stalled_removes_only_what_it_acked(broker, client):
    send(broker, 2)
    stalled = reader(client)
    m1, m2 = stalled.take([SNAPSHOT_QUEUE], 2)
    assert give_back(client, "c1#1") == 2  # as a sweep does to a consumer whose lease ran out
    send(broker, 1, first=2)
    # Taken again in order: its two (now redelivered), then the new one; then its old copies are acked.
    m3, m4, m5 = stalled.take([SNAPSHOT_QUEUE], 3)
    for message in (m1, m2, m3):
        message.ack()
    stalled.commit_acks()
    assert client.lrange(taken_key("c1#1", SNAPSHOT_QUEUE), 0, -1) == [m5.raw, m4.raw]
    for message in (m4, m5):
        message.ack()
    stalled.commit_acks()
    assert taken_count(client) == 0 and client.llen(SNAPSHOT_QUEUE) == 0
    # Its list emptied, it trims again.
    send(broker, 1, first=3)
    (m6,) = stalled.take([SNAPSHOT_QUEUE], 5)
    m6.ack()
    stalled.commit_acks()
    assert taken_count(client) == 0


def test_an_idle_reader_looks_less_often_while_its_queues_stay_empty_and_at_once_again_when_a_message_comes(
    broker, client
):
    waits, came = [], []
    taking = TakingReader(reader(client), came.append, waits.append, redeliver_after=60)
    with taking.reading([SNAPSHOT_QUEUE]):
        for _ in range(5):
            assert not taking.fetch(10, 64 << 20, 1.0)
            taking.idle(1.0)
        assert waits == [0.02, 0.04, 0.08, 0.1, 0.1]
        taking.idle(0.05)  # never past the consumer's own deadline (a batch's max wait, a lease's beat)
        assert waits[-1] == 0.05
        sent = send(broker, 1)
        assert taking.fetch(10, 64 << 20, 1.0)
        assert [collected(m) for m in came] == sent
        taking.idle(1.0)
        assert waits[-1] == 0.02
