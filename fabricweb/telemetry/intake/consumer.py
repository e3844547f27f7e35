"""Store node snapshots from the `snapshots` queue in batches: `python manage.py ingest`.

Node agents send each snapshot as a Celery task message (`ingest_snapshot`, protocol 2,
JSON). A Celery worker would store each in a transaction of its own; this reads the
queue with kombu, through the project's Celery app, and stores the snapshots of up to
`batch` messages with one ingest_batch call: one transaction, several times cheaper per
snapshot on PostgreSQL.

Delivery is at least once. A message is acked only after the transaction holding its
snapshot committed; one that is not is stored later (database down: the batch stays in
hand, in order, and is tried again first) or delivered again (process killed: it is put
back after `redeliver_after`), and ingest is idempotent, so a snapshot stored twice
is a harmless duplicate. Only JSON is decoded:
every compute node can reach the broker, and nothing it sends may get unpickled here
(messages.py reads each message).

The consumer keeps its unacked messages under keys of its own (`ingest.taken.*` on plain
redis://, redisread.py; kombu's unacked hash `unacked.snapshots`... on other brokers),
so it can take them back after `redeliver_after` seconds (60 by default, not kombu's
hour) without touching the Celery workers' unacked tasks, some of which rightly run or
wait longer: a consumer killed mid-batch has its batch stored by the next one to start
within a minute. Every broker command has a socket timeout, so a broker that stalls
cannot hold the process past SIGTERM.

One read loop (`_read`) for any broker, through a reader (readers.py): on plain redis:// it takes
up to a batch of messages per round trip, on other brokers kombu delivers them.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable

import redis
from django.conf import settings
from kombu.exceptions import OperationalError as BrokerUnreachable
from kombu.utils.url import maybe_sanitize_url

from fabricweb.cappedredis import capped_parser
from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.inventory.models import Node
from fabricweb.names import INGEST_FABRIC, SWEEP_QUEUE, shard_queue

from ..validation.auth import NotAuthenticated
from ..validation.typed import SnapshotIn
from .batchstore import MAX_BACKOFF_S, StoresBatches
from .broker import transport_for
from .messages import MAX_ENVELOPE_BYTES, MAX_SWEEP_ENVELOPE_BYTES, Dropped, FabricSnapshot, message_id, snapshots_of
from .readers import BROKER_TIMEOUT_S, KombuReader, Reader, TakingReader, transport_options
from .redisread import BatchReader
from .shards import ShardLeases, new_consumer_id
from .spend import NodeSpend, OverBudget

log = logging.getLogger(__name__)

IDLE_WAIT_S = 1.0  # the longest one wait for a message blocks: a signal does not cut it short
REPORT_EVERY_S = 60.0
REDELIVER_AFTER_S = 60.0
LEASE_S = 15.0  # several shards: a consumer silent this long is dead, its queues taken over


class BatchConsumer(StoresBatches):
    """Reads the snapshots queue and stores its messages in batches, until stop()."""

    def __init__(
        self,
        batch: int = 100,
        max_wait: float = 0.2,
        *,
        broker_url: str | None = None,
        redeliver_after: float = REDELIVER_AFTER_S,
        shards: int = 1,
        lease_s: float = LEASE_S,
    ) -> None:
        if batch < 1 or max_wait < 0 or redeliver_after <= max_wait:
            raise ValueError("batch must be 1 or more, max_wait 0 or more, and redeliver_after longer than max_wait")
        if shards < 1 or not lease_s > 0:
            raise ValueError("shards must be 1 or more, and the lease longer than 0 s")
        self.batch, self.max_wait, self.broker_url = batch, max_wait, broker_url
        self.shards, self.lease_s = shards, lease_s
        self.leases: ShardLeases | None = None  # several shards: this consumer's, once connected
        self.reader: Reader | None = None  # of the connection in use (readers.py)
        self.redeliver_after = redeliver_after
        self.consumer_id = new_consumer_id() if shards > 1 else None
        # A reader per connection takes as `<id>#<n>` (redisread): what one lost with its connection is
        # given back after redeliver_after, while this process goes on reading with the next.
        self.takers = (f"{self.consumer_id or new_consumer_id()}#{n}" for n in itertools.count(1))
        self.options = transport_options(redeliver_after, self.consumer_id)
        self.pending: list[tuple[object, list]] = []  # (message, its snapshots), oldest first
        self.pending_bytes = 0  # the messages' own, as read from the broker
        self.batch_bytes = settings.FABRIC_INGEST_BATCH_BYTES
        self.oldest_at = 0.0
        self.stopping = False
        self.shown = ""  # the broker, for logs
        self.db_backoff = 0.0
        self.failures: dict[str, int] = {}  # message id -> database errors while the database answered
        # A batch the database could not take (down, locked): tried again before anything newer. Requeued
        # instead, it would go behind the polls queued meanwhile, and each node's older polls, stored after
        # its newer ones, would be stale: a database outage would cost every poll queued before it.
        self.held: list[tuple[object, list]] = []
        # Since start: batches, snapshots, samples, rejected, dropped, requeued, over budget (messages).
        self.totals: Counter[str] = Counter()
        self.spend = NodeSpend(settings.FABRIC_NODE_MAX_BYTES_PER_MINUTE)  # bytes a minute each host may send
        self.collector_spend = NodeSpend(
            settings.FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE, Node.Kind.COLLECTOR, "FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE"
        )
        self._reported, self._reported_at = Counter(), time.monotonic()

    def stop(self, *args) -> None:
        """Finish (or requeue) the batch in hand, then return from run(). Also a signal handler."""
        self.stopping = True

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Consume until stop(), or until `until()` is true (asked between batches); never give up on the broker."""
        backoff = 0.0
        while not self._done(until):
            url = self.broker_url or app.conf.broker_read_url or app.conf.broker_url
            conn = app.connection_for_read(url, transport=transport_for(url), transport_options=self.options)
            self.shown = maybe_sanitize_url(url) if url else conn.as_uri()  # the URL as configured, no password
            try:
                conn.ensure_connection(max_retries=0)
                self._declare(conn)
                if backoff:
                    log.warning("ingest: connected to the broker %s again", self.shown)
                backoff = 0.0
                client = narrow = None
                if self.shards > 1 or transport_for(url):
                    # Oversized messages are drained unread: node messages at their cap, sweeps at theirs.
                    client, narrow = (
                        redis.Redis.from_url(
                            url or conn.as_uri(include_password=True),
                            socket_timeout=BROKER_TIMEOUT_S,
                            socket_connect_timeout=BROKER_TIMEOUT_S,
                            parser_class=capped_parser(cap),
                        )
                        for cap in (MAX_SWEEP_ENVELOPE_BYTES, MAX_ENVELOPE_BYTES)
                    )
                if self.shards > 1 and self.leases is None:
                    self.leases = ShardLeases(
                        client,
                        self.shards,
                        self.lease_s,
                        self.consumer_id,
                        sweeps_apart=bool(settings.FABRIC_COLLECTORS),
                    )
                previous, self.reader = self.reader, None
                if transport_for(url):  # plain redis://: batches taken in one round trip
                    batches = BatchReader(
                        client, self.options, next(self.takers), narrow=narrow, batch_bytes=self.batch_bytes
                    )
                    self.reader = TakingReader(batches, self._receive, self._sleep, self.redeliver_after)
                else:
                    self.reader = KombuReader(conn, self._receive, self.batch)
                if previous is not None:
                    previous.lost(client)
                self._consume(until)
            except (*conn.connection_errors, BrokerUnreachable, redis.ConnectionError, redis.TimeoutError) as e:
                # Not acked, so the broker still has them and delivers them again.
                held, self.pending = len(self.pending), []
                if self.stopping:  # e.g. runfabric stopping the broker at the same time
                    log.warning("ingest: lost the broker %s while stopping (%s)", self.shown, e)
                    continue
                backoff = min(MAX_BACKOFF_S, 2 * backoff or 1.0)
                log.error(
                    "ingest: lost the broker %s (%s); %d message(s) in hand left to it; connecting again in %g s",
                    self.shown,
                    e or type(e).__name__,
                    held,
                    backoff,
                )
                self._sleep(backoff)
            finally:
                with contextlib.suppress(Exception):  # a lost connection may not close cleanly
                    conn.release()

    def _declare(self, conn) -> None:
        """Declare every queue this consumer may read, as Celery declares a queue: a node agent (or collector)
        under its Redis ACL user may read the bindings it sends by but never add one (fabricweb/brokeracl.py)."""
        names = [SNAPSHOT_QUEUE, SWEEP_QUEUE, *(shard_queue(k) for k in range(self.shards) if self.shards > 1)]
        channel = conn.default_channel
        for name in names:
            app.amqp.queues[name](channel).declare()

    def _consume(self, until) -> None:
        if self.leases is None:
            self._read(until, [SNAPSHOT_QUEUE, SWEEP_QUEUE])
            return
        # Several shards: read the leased queues; at each beat, nothing in hand, follow changes of lease.
        shown = None
        while not self._done(until):
            self.leases.beat()
            # Nothing in hand: _read stored its batch before returning, unless the database is away (then
            # the batch stays here, and so do its queues: another consumer would store their newer polls first).
            if self.leases.over_share and not self.pending:
                self.leases.give_up()
            queues = self.leases.queues()
            if queues != shown:
                log.info("ingest: consumer %s holds %s", self.leases.id, ", ".join(queues) or "no snapshot queue")
                shown = queues
            if queues:
                self._read(until, queues)
            else:
                self._sleep(self.lease_s / 3)
        if self.stopping:
            self.leases.leave()  # the others take its queues at their next beat, not a lease later

    def _read(self, until, names: list[str]) -> None:
        """Read `names` until done, or (several shards) until a beat changes the leases held."""
        reader = self.reader
        with reader.reading(names):
            self._say_reading(names)
            next_beat = time.monotonic() + self.lease_s / 3
            while not self._done(until):
                came = reader.fetch(
                    self.batch - len(self.pending), self.batch_bytes - self.pending_bytes, self._wait_s(next_beat)
                )
                # Full: a batch of messages, or too few bytes left for one more node message at its cap.
                full = len(self.pending) >= self.batch or self.pending_bytes + MAX_ENVELOPE_BYTES > self.batch_bytes
                if self.pending and (full or time.monotonic() - self.oldest_at >= self.max_wait or self.stopping):
                    self.flush()
                elif not came:
                    reader.idle(self._wait_s(next_beat))
                self._report()
                if self.leases is not None and time.monotonic() >= next_beat:
                    if self._leases_changed():
                        break
                    next_beat = time.monotonic() + self.lease_s / 3
            self.flush()
        if self.stopping:
            reader.leave()

    def _say_reading(self, names: list[str]) -> None:
        log.info(
            "ingest: reading %s on %s, batches of up to %d messages, %g s max wait",
            ", ".join(names),
            self.shown,
            self.batch,
            self.max_wait,
        )

    def _leases_changed(self) -> bool:
        """Beat (several shards); True when the queues this consumer holds changed and it must read anew."""
        held = self.leases.held
        self.leases.beat()
        if self.leases.over_share:
            self.flush()  # nothing in hand: a queue given up may be read elsewhere at once
            if not self.pending:  # (a batch kept for the database keeps its queues)
                self.leases.give_up()
        return self.leases.held != held

    def _receive(self, message) -> None:
        size = len(getattr(message, "raw", None) or message.body or b"")
        charged = []  # a signed message is charged to its sender before it is decoded

        def admit(task: str, sender: str) -> None:
            self._budget(task).admit(sender, len(message.body or b""))
            charged.append(sender)

        try:
            snaps = snapshots_of(message, admit)
            if not charged:  # unsigned (FABRIC_NODE_AUTH off): charged to the name it gives
                sender = _sender(snaps)
                if sender is not None:
                    admit((message.headers or {}).get("task"), sender)
        except OverBudget:  # counted and logged by its NodeSpend
            self.totals["over budget"] += 1
            message.ack()
            return
        except NotAuthenticated as e:
            log.warning("ingest: refused message %s: %s", message_id(message), e)
            self.totals["unauthenticated"] += 1
            message.ack()
            return
        except Dropped as e:
            log.warning("ingest: dropped message %s: %s", message_id(message), e)
            self.totals["dropped"] += 1
            message.ack()
            return
        if snaps and isinstance(snaps[0], FabricSnapshot):
            # A sweep is stored alone, after the node snapshots that came before it.
            self.flush()
            self.pending.append((message, snaps))
            self.flush()
            return
        if not self.pending:
            self.oldest_at = time.monotonic()
        self.pending.append((message, snaps))
        self.pending_bytes += size

    def _budget(self, task: str) -> NodeSpend:
        return self.collector_spend if task == INGEST_FABRIC else self.spend

    def flush(self) -> None:
        """Store the batch in hand and ack it; on a database error keep it (or requeue it) and back off."""
        batch, self.pending, self.pending_bytes = self.pending, [], 0
        stored = not batch or self._store(batch)
        if stored:
            self.spend.write()  # the refusals since the last batch, on their nodes' rows
        if self.reader is not None:
            self.reader.commit_acks()  # after its commit
        if not stored:
            self._sleep(self.db_backoff)
        if self.held:
            # Due again at once: the oldest first, then what came in meanwhile.
            self.pending, self.held = self.held + self.pending, []
            self.oldest_at = time.monotonic() - self.max_wait

    def _done(self, until) -> bool:
        return self.stopping or (until is not None and not self.pending and until())

    def _wait_s(self, next_beat: float) -> float:
        now = time.monotonic()
        longest = max(0.0, min(IDLE_WAIT_S, next_beat - now)) if self.leases is not None else IDLE_WAIT_S
        if not self.pending:
            return longest
        return max(0.0, min(longest, self.oldest_at + self.max_wait - now))

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < end:
            time.sleep(min(0.1, max(0.0, end - time.monotonic())))

    def _report(self) -> None:
        now = time.monotonic()
        span = now - self._reported_at
        if span < REPORT_EVERY_S:
            return
        done = self.totals - self._reported
        self._reported, self._reported_at = self.totals.copy(), now
        if done:
            log.info(
                "ingest: %.1f snapshots/s, %.0f port-samples/s over %.0f s "
                "(%d batches; %d rejected, %d unauthenticated, %d dropped, %d over a node's budget, %d requeued, "
                "%d held for the database)",
                done["snapshots"] / span,
                done["samples"] / span,
                span,
                done["batches"],
                done["rejected"],
                done["unauthenticated"],
                done["dropped"],
                done["over budget"],
                done["requeued"],
                done["held"],
            )


def _sender(snaps: list) -> str | None:
    """The name an unsigned message's snapshot gives its sender: a host's `host`, a sweep's `collector`."""
    if snaps and type(snaps[0]) is SnapshotIn:  # typed as it was read (messages.snapshots_of)
        return snaps[0].host
    data = snaps[0].data if snaps and isinstance(snaps[0], FabricSnapshot) else snaps[0] if snaps else None
    name = data.get("collector" if isinstance(snaps[0], FabricSnapshot) else "host") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None
