"""The broker of the pipeline tests: a leased Redis database, and sending to it as agents (or attackers) do; the
polls they send (`polls`, `send`), a consumer run in the test's thread (`consume`) and what it stored (`stored`)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

import pytest
import redis

from collectors import wire
from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.inventory.models import Node
from fabricweb.names import SWEEP_QUEUE
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.intake.consumer import BatchConsumer
from fabricweb.telemetry.intake.messages import FABRIC, ONE
from fabricweb.telemetry.intake.readers import transport_options
from fabricweb.telemetry.intake.redisread import taken_count
from tests.fixture_trees import later, snapshot

# The tests whose consumer runs in a process of its own need PostgreSQL (another process sees its commits).
needs_postgres = pytest.mark.skipif(
    not os.environ.get("TEST_POSTGRES_URL") and not os.environ.get("CI"), reason="TEST_POSTGRES_URL is not set"
)


def padded_message(task: str, message_id: str, size: int) -> bytes:
    """A kombu envelope of exactly `size` bytes, as a node could push it with LPUSH: its body padding."""
    head = b'{"body": "'
    tail = json.dumps(
        {
            "content-type": "application/json",
            "content-encoding": "utf-8",
            "headers": {"task": task, "id": message_id},
            "properties": {"delivery_tag": message_id, "body_encoding": None},
        }
    ).encode()
    return head + b"x" * (size - len(head) - len(tail) - 2) + b'", ' + tail[1:]


def on_the_wire(snapshot: object) -> object:
    """A schema 2 snapshot (a dict with devices) as an agent sends it; anything else as it is."""
    if isinstance(snapshot, dict) and "devices" in snapshot and "wire" not in snapshot:
        return wire.encode(snapshot, "fabricweb (tests)")
    return snapshot


@dataclass
class Broker:
    url: str
    redis: redis.Redis
    conn: object  # a kombu connection for sending

    def send(self, task: str = ONE, *args, **kwargs) -> None:
        """As the node agent sends a snapshot (send_task by name, to the snapshots queue, a snapshot in its wire
        form: collectors/wire.py), or a fabric collector a sweep (to the sweeps queue)."""
        queue = SWEEP_QUEUE if task == FABRIC else SNAPSHOT_QUEUE
        if task == ONE:
            args, kwargs = tuple(map(on_the_wire, args)), {k: on_the_wire(v) for k, v in kwargs.items()}
        app.send_task(task, args=list(args), kwargs=kwargs, queue=queue, connection=self.conn)

    def publish(self, body, serializer: str, task: str = ONE, message_id: str = "raw") -> None:
        """A message no Celery client would send: any body, any serializer."""
        headers = {"task": task, "id": message_id}
        self.conn.Producer().publish(
            body, exchange="", routing_key=SNAPSHOT_QUEUE, serializer=serializer, headers=headers
        )

    def left(self) -> tuple[int, int]:
        """(messages waiting on the queues, messages taken and not yet acked: moved by the consumer's reader, or
        delivered by kombu)."""
        unacked = self.redis.hlen(transport_options(60)["unacked_key"])
        waiting = self.redis.llen(SNAPSHOT_QUEUE) + self.redis.llen(SWEEP_QUEUE)
        return waiting, taken_count(self.redis) + unacked


PORTS = 4  # ports in the fixture tree's snapshot: one sample each per poll

# Other processes must see the data: the PostgreSQL test database, committed for real.
postgres_only = pytest.mark.django_db(transaction=True, databases=["postgres"])


def consume(url: str, done, batch: int = 100, max_wait: float = 0.2, timeout: float = 20) -> BatchConsumer:
    """Run a consumer of the broker at `url` in this thread until done(consumer), or give up after `timeout` s."""
    consumer = BatchConsumer(batch, max_wait, broker_url=url)
    deadline = time.monotonic() + timeout
    consumer.run(until=lambda: done(consumer) or time.monotonic() > deadline)
    return consumer


def polls(nodes: int, each: int) -> list[dict]:
    """`each` consecutive polls of `nodes` nodes, in the order the agents would send them."""
    first = [snapshot(host=f"cn{n:03d}") for n in range(1, nodes + 1)]
    return [later(s, 10 * k) for k in range(each) for s in first]


def stored() -> dict[str, int]:
    return {n.name: len(list(samples.between(nodes=[n]))) for n in Node.objects.all()}


def send(broker, count: int, queue: str = SNAPSHOT_QUEUE, first: int = 0) -> list[str]:
    """`count` polls of cn001 onto `queue`, 10 s apart from `first`; their collected_at, in sending order."""
    snaps = polls(1, first + count)[first:]
    for snap in snaps:
        app.send_task(ONE, args=[on_the_wire(snap)], queue=queue, connection=broker.conn)
    return [s["collected_at"] for s in snaps]
