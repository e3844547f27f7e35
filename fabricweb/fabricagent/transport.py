"""kombu's Redis transport for the fabric collector: one client per channel, and no wake-up every second.

Built for the node agent when it was a Celery worker (it has its own loop now: fabricweb/agent/loop.py).
kombu builds a new redis.Redis (about 170 response callbacks copied into a fresh dict) for
every publish, acknowledgement and queue check of a channel; a poll made three.
A redis.Redis is safe to share between threads (each command takes a connection from the pool),
so the channel keeps one per connection pool. Same protocol, same connections, same options
(TLS included): selected for redis:// and rediss:// brokers (fabricweb/fabricagent/app.py).

It also leaves out kombu's once-a-second refresh of expiring queues' bindings, its 10 s hand-over of
rotated credentials and its 25 s ping of a pub/sub connection (below: a stop signal wakes the loop
instead), sends nothing to acknowledge a message it never stored as unacknowledged (the collector's
sweeps are consumed without acknowledgement: app.py), restores nothing (it keeps nothing unacknowledged),
never binds its own queue (the central side does, sending the first sweep), and adds an exchange's
binding only when it is missing: its Redis ACL user (fabricweb/brokeracl.py) may read the `sweeps`
bindings but not change them, since a binding added there would route every collector's sweeps to a
queue of its choosing.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress

from celery.signals import worker_shutting_down
from kombu.transport import redis as kombu_redis

from fabricweb.names import COLLECTOR_QUEUE_PREFIX

# The queues a fabric collector takes its sweeps from: never bound by it (its ACL user may not).
OWN_QUEUE_PREFIXES = (COLLECTOR_QUEUE_PREFIX,)
# kombu's repeating timers of the event loop that do nothing for the collector but wake it (register_with_event_loop).
IDLE_TIMERS = ("_binding_expiry_tref", "_reauth_tref", "_subclient_health_tref")


class QoS(kombu_redis.QoS):
    """The collector's sweeps are consumed without acknowledgement (app.poll_queues): nothing is ever kept
    unacknowledged, so nothing is restored, at shutdown or in between, and its broker user may not write
    the keys kombu would look in (fabricweb/brokeracl.py)."""

    restore_at_shutdown = False

    def restore_visible(self, *args, **kwargs) -> None:
        return None


class Channel(kombu_redis.Channel):
    QoS = QoS
    _shared_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        shared = self._shared_client
        if shared is None or shared.connection_pool is not self.pool:  # the pool is rebuilt after a fork
            shared = self._shared_client = self._create_client()
        yield shared

    def basic_ack(self, delivery_tag, multiple=False):
        # A message of a no-ack queue (the collector's sweeps: app.py) was never stored as unacknowledged;
        # Celery acknowledges it all the same, which would cost a MULTI/EXEC removing nothing.
        if delivery_tag not in self.qos._delivered:
            return
        super().basic_ack(delivery_tag, multiple)

    def close(self):
        # kombu reads the reply of a waiting BRPOP before it closes: up to the broker wait (10 s) after a
        # SIGTERM. Hung up instead: Redis pops nothing for a client gone while it waits, and a poll it popped
        # in that instant is one poll lost, as with a collector killed mid-sweep (app.poll_queues).
        waiting = self._in_poll
        if waiting:
            waiting.disconnect()
            self._in_poll = None
        super().close()

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        keys = (self.keyprefix_queue % (exchange,), self.keyprefix_binding_permanent % (exchange,))
        member = self.sep.join([routing_key or "", pattern or "", queue or ""])
        if queue not in self._expires:
            with self.conn_or_acquire() as client:
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.sismember(key, member)
                if all(pipe.execute()):
                    return  # declared already (by `manage.py ingest`, central dispatch or an earlier start)
        if queue and queue.startswith(OWN_QUEUE_PREFIXES):
            return  # its own polls' queue: read by BRPOP, bound by the central side when it sends the first poll
        super()._queue_bind(exchange, routing_key, pattern, queue)


class Transport(kombu_redis.Transport):
    Channel = Channel
    # A pipe in the event loop whose write end wakes it (read end, write end): once a process.
    _waker: tuple[int, int] | None = None

    def register_with_event_loop(self, connection, loop):
        super().register_with_event_loop(connection, loop)
        # kombu refreshes the bindings of expiring queues every second, which wakes the worker
        # every second; the collector's queues never expire (none is declared with x-expires).
        # Every 10 s it hands rotated tokens of a streaming credential provider to its long-lived
        # connections (the collector's password is fixed: nothing to hand), and every 25 s it pings
        # the pub/sub connection (it has none: no remote control). Without them the event loop
        # sleeps until the next poll, the BRPOP's timeout, or the 25 s check of a BRPOP overdue
        # (a half-open connection), which stays.
        for name in IDLE_TIMERS:
            timer = getattr(self.cycle, name, None)
            if timer is not None:
                timer.cancel()
        # A stop signal only sets a flag the loop reads when it wakes: up to 10 s later, so a SIGTERM would wait
        # that long. Celery's signal handler sends worker_shutting_down; a byte in the pipe wakes the loop.
        if Transport._waker is None:
            Transport._waker = os.pipe()
            for fd in Transport._waker:
                os.set_blocking(fd, False)
            worker_shutting_down.connect(_wake_loop, weak=False)
        loop.add_reader(Transport._waker[0], _drain, Transport._waker[0])


def _wake_loop(**kwargs) -> None:
    with suppress(BlockingIOError):  # full: the loop has bytes to wake it already
        os.write(Transport._waker[1], b"\0")


def _drain(fd: int) -> None:
    with suppress(BlockingIOError):
        os.read(fd, 512)
