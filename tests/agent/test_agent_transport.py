"""Covers fabricweb/fabricagent/app.py, fabricweb/fabricagent/transport.py.

The fabric collector's Redis transport: the same messages, one client per channel, and an event loop that sleeps.
(The node agent's own loop, and its stop at SIGTERM, are tests/agent/test_agent_loop.py's.)"""

from __future__ import annotations

import threading
import time

import pytest
import redis
from kombu import Connection, Exchange, Queue
from kombu.asynchronous import Hub
from kombu.asynchronous.timer import Timer

from fabricweb.fabricagent.app import poll_queues
from fabricweb.fabricagent.transport import IDLE_TIMERS, Transport
from fabricweb.names import collector_queue
from tests.e2e.e2e_harness import leased_redis_db


@pytest.fixture
def url():
    with leased_redis_db() as url:
        # The central side binds a node's queue as it sends the first poll; the agent never does (its ACL user
        # may not: fabricweb/brokeracl.py).
        with Connection(url) as central:
            Queue("fabric.fab01", Exchange("fabric.fab01", "direct"), routing_key="fabric.fab01")(
                central.default_channel
            ).declare()
        yield url


def test_it_delivers_what_it_publishes_through_one_client(url):
    queue = Queue("fabric.fab01", Exchange("fabric.fab01", "direct"), routing_key="fabric.fab01")
    with Connection(url, transport=Transport) as conn:
        producer = conn.Producer(serializer="json")
        producer.publish({"poll": 0}, exchange=queue.exchange, routing_key="fabric.fab01", declare=[queue])
        client = producer.channel._shared_client
        assert client is not None
        for poll in (1, 2):
            producer.publish({"poll": poll}, exchange=queue.exchange, routing_key="fabric.fab01")
            assert producer.channel._shared_client is client
        bound = queue(conn.default_channel)
        got = [bound.get(no_ack=True).payload for _ in range(3)]
    assert got == [{"poll": 0}, {"poll": 1}, {"poll": 2}]


def test_its_event_loop_sleeps_until_a_poll_arrives_instead_of_waking_every_second(url):
    queue = Queue("fabric.fab01", Exchange("fabric.fab01", "direct"), routing_key="fabric.fab01")
    received: list[float] = []
    with Connection(url, transport=Transport, transport_options={"polling_interval": 10}) as conn:
        hub = Hub(timer=Timer(max_interval=10.0))  # as the Celery worker builds its event loop
        consumer = conn.Consumer([queue], callbacks=[lambda body, message: received.append(time.monotonic())])
        consumer.consume()
        conn.transport.register_with_event_loop(conn.connection, hub)
        loop = hub.create_loop()
        sent: list[float] = []

        def poll() -> None:  # central beat, 4 s later
            with Connection(url) as sender:
                sender.Producer(serializer="json").publish(
                    {"poll": 1}, exchange=queue.exchange, routing_key="fabric.fab01"
                )
            sent.append(time.monotonic())

        beat = threading.Timer(4.0, poll)
        beat.start()
        wakes, start = 0, time.monotonic()
        try:
            while not received and time.monotonic() - start < 15:
                next(loop)
                wakes += 1
        finally:
            beat.join(10)
            hub.close()
    # kombu's stock transport wakes every second (a 1 s timer): 5 or more times by then.
    assert wakes <= 3
    assert received and received[0] - sent[0] < 1.0  # a poll still wakes it at once


def test_its_event_loop_keeps_only_the_timers_that_do_something_for_the_agent(url):
    queue = Queue("fabric.fab01", Exchange("fabric.fab01", "direct"), routing_key="fabric.fab01")
    with Connection(url, transport=Transport, transport_options={"polling_interval": 10}) as conn:
        hub = Hub(timer=Timer(max_interval=10.0))
        consumer = conn.Consumer([queue], callbacks=[lambda body, message: None])
        consumer.consume()
        conn.transport.register_with_event_loop(conn.connection, hub)
        try:
            cycle = conn.transport.cycle
            # Binding refresh (1 s), credentials' hand-over (10 s), pub/sub ping (25 s): gone.
            assert [getattr(cycle, name).canceled for name in IDLE_TIMERS] == [True, True, True]
            # A BRPOP overdue (a half-open connection) is still found, and unacked messages still restored.
            assert not cycle._brpop_health_tref.canceled and not cycle._restore_messages_tref.canceled
            live = sorted(entry.entry.fun.__name__ for entry in hub.timer.queue if not entry.entry.canceled)
            assert live == ["maybe_check_brpop_health", "maybe_restore_messages"]
        finally:
            hub.close()


def test_a_poll_is_taken_without_being_stored_as_unacknowledged_and_its_ack_costs_nothing(url):
    # As the collector consumes its queue (fabricweb/fabricagent/app.py): a poll is worth nothing after its
    # interval, so it is not kept in kombu's unacked hash while it runs (two round trips a poll fewer).
    queue = poll_queues(["fab01"], collector_queue)[0]
    assert queue.name == "fabric.fab01" and queue.no_ack
    got = []
    with Connection(url, transport=Transport) as conn:
        conn.Producer(serializer="json").publish(
            {"poll": 1}, exchange=queue.exchange, routing_key=queue.routing_key, declare=[queue]
        )
        client = conn.default_channel._shared_client or redis.Redis.from_url(url)
        with conn.Consumer([queue], callbacks=[lambda body, message: got.append(message)]):
            conn.drain_events(timeout=5)
            assert [m.payload for m in got] == [{"poll": 1}]
            assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0
            got[0].ack()  # what Celery does after the task: nothing to remove, nothing sent
            assert client.llen("fabric.fab01") == 0
