"""How the ingest consumer reads its queues: one interface, two readers, chosen by the broker.

On a plain redis:// broker, `TakingReader` takes up to a batch of messages per round trip and
acks a batch in one (redisread.py); on any other, `KombuReader` has kombu deliver them, with a
prefetch of a batch. Either hands each message to the consumer (`receive`); the consumer's one
read loop (consumer.BatchConsumer._read) decides when to store, beat its leases and stop:

    with reader.reading(queues):
        ... reader.fetch(room, room_bytes, wait_s) ... reader.idle(wait_s) ... reader.commit_acks()
    reader.leave()  # when stopping

`transport_options` are the connection's: the consumer's own unacked keys, and how soon what a
killed consumer took is given back (consumer.py's docstring).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import redis

from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.names import SNAPSHOT_UNACKED_KEY

from .messages import MAX_SWEEP_ENVELOPE_BYTES
from .redisread import BatchReader, give_back
from .shards import unacked_keys

BROKER_TIMEOUT_S = 5.0
# plain redis://: how often a consumer looks for messages once its queues run dry, then, while they stay empty,
# twice as long each time up to IDLE_TAKE_EVERY_S (each look is a round trip of ~0.3 ms of the consumer's CPU:
# an idle consumer took 16 ms of CPU a second, 8 with the back-off: bench/bench_idle.py). A poll's first message
# then waits at most that long.
TAKE_EVERY_S = 0.02
IDLE_TAKE_EVERY_S = 0.1
RESTORE_EVERY_S = 1.0  # ... and for messages a killed consumer left unacked past redeliver_after


def transport_options(redeliver_after: float, consumer_id: str | None = None) -> dict:
    """kombu Redis options of the consumer's connection (see consumer.py's docstring); with a
    `consumer_id` (several shards), unacked messages under keys of that consumer alone."""
    keys = (
        unacked_keys(consumer_id)
        if consumer_id
        else {
            "unacked_key": SNAPSHOT_UNACKED_KEY,
            "unacked_index_key": f"unacked_index.{SNAPSHOT_QUEUE}",
            "unacked_mutex_key": f"unacked_mutex.{SNAPSHOT_QUEUE}",
        }
    )
    return {
        **keys,
        "visibility_timeout": redeliver_after,
        "unacked_restore_throttle": 1,  # look for abandoned messages at every idle poll (one cheap ZRANGE)
        "socket_timeout": BROKER_TIMEOUT_S,
        "socket_connect_timeout": BROKER_TIMEOUT_S,
        # Larger messages are drained unread (fabricweb/cappedredis.py): read through kombu or redisread. kombu
        # reads every queue on one connection, so at the sweeps' cap; redisread takes node messages at their own.
        "max_message_bytes": MAX_SWEEP_ENVELOPE_BYTES,
    }


class Reader(Protocol):
    """What the consumer's read loop asks of a reader of its snapshot queues."""

    def reading(self, names: list[str]) -> contextlib.AbstractContextManager:
        """Read the queues `names` while in this context."""

    def fetch(self, room: int, room_bytes: int, wait_s: float) -> bool:
        """Hand up to `room` messages (and, where the reader can tell before reading them, `room_bytes` bytes)
        to the consumer; False when none came and none was waited for."""

    def idle(self, wait_s: float) -> None:
        """Nothing came and nothing is to be stored: the reader's chores, then wait a little (at most `wait_s`)."""

    def commit_acks(self) -> None:
        """The acks of the messages stored (or dropped) since the last call, now."""

    def leave(self) -> None:
        """The consumer stops: what it took and did not store is given back at once."""

    def lost(self, client: redis.Redis | None) -> None:
        """The connection this reader read on is gone; `client` is the next one's."""


class KombuReader:
    """Delivery by kombu (any broker): queues declared as Celery declares them, a prefetch of a batch."""

    def __init__(self, conn, receive: Callable[[object], None], prefetch: int) -> None:
        self.conn, self.receive, self.prefetch = conn, receive, prefetch

    @contextlib.contextmanager
    def reading(self, names: list[str]) -> Iterator[None]:
        # As Celery declares them (a direct exchange and routing key named like the queue), so
        # agents' send_task(queue=...) and this agree whichever side declares a queue first.
        queues = [app.amqp.queues[name] for name in names]
        with self.conn.Consumer(queues, on_message=self.receive, accept=["json"], prefetch_count=self.prefetch):
            yield

    def fetch(self, room: int, room_bytes: int, wait_s: float) -> bool:
        # One message at a time, each within the connection's cap: the consumer stores its batch at its bytes.
        if room > 0:
            with contextlib.suppress(socket.timeout):
                self.conn.drain_events(timeout=wait_s)
        return True  # it waited (drain_events blocks): no idle chores

    def idle(self, wait_s: float) -> None:
        pass

    def commit_acks(self) -> None:
        pass  # kombu acks each message as the consumer acks it

    def leave(self) -> None:
        pass  # kombu's unacked messages go back after the visibility timeout

    def lost(self, client: redis.Redis | None) -> None:
        pass


class TakingReader:
    """A plain redis:// broker: up to a batch of messages taken per round trip (redisread.BatchReader)."""

    def __init__(
        self,
        batches: BatchReader,
        receive: Callable[[object], None],
        sleep: Callable[[float], None],
        redeliver_after: float,
    ) -> None:
        self.batches, self.receive, self.sleep = batches, receive, sleep
        self.redeliver_after = redeliver_after
        self.names: list[str] = []
        self.next_restore = 0.0
        self.take_every = TAKE_EVERY_S  # the next idle wait: doubled while nothing comes, back when something does

    @property
    def taker(self) -> str:
        return self.batches.taker

    @contextlib.contextmanager
    def reading(self, names: list[str]) -> Iterator[None]:
        self.names, self.next_restore = names, 0.0
        yield

    def fetch(self, room: int, room_bytes: int, wait_s: float) -> bool:
        taken = self.batches.take(self.names, room, room_bytes)
        for message in taken:
            self.receive(message)
        if taken:
            self.take_every = TAKE_EVERY_S
        return bool(taken)

    def idle(self, wait_s: float) -> None:
        self.batches.commit_acks()  # messages dropped while nothing else came
        if time.monotonic() >= self.next_restore:
            self.batches.restore_older_than(self.redeliver_after)
            self.next_restore = time.monotonic() + RESTORE_EVERY_S
        self.sleep(min(self.take_every, wait_s))
        self.take_every = min(IDLE_TAKE_EVERY_S, 2 * self.take_every)

    def commit_acks(self) -> None:
        self.batches.commit_acks()  # a batch's acks in one round trip

    def leave(self) -> None:
        self.batches.leave()

    def lost(self, client: redis.Redis | None) -> None:
        give_back(client, self.taker)  # the batch in hand went with the connection: read it again first
