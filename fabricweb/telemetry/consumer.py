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
every compute node can reach the broker, and nothing it sends may get unpickled here.

The consumer keeps its unacked messages under keys of its own (`ingest.taken.*` on plain
redis://, redisread.py; kombu's unacked hash `unacked.snapshots`... on other brokers),
so it can take them back after `redeliver_after` seconds (60 by default, not kombu's
hour) without touching the Celery workers' unacked tasks, some of which rightly run or
wait longer: a consumer killed mid-batch has its batch stored by the next one to start
within a minute. Every broker command has a socket timeout, so a broker that stalls
cannot hold the process past SIGTERM.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import time
from collections import Counter
from collections.abc import Callable

import redis
from django.db import DatabaseError, OperationalError, close_old_connections, connection
from kombu.exceptions import OperationalError as BrokerUnreachable
from kombu.utils.url import maybe_sanitize_url

from fabricweb.celery import SNAPSHOT_QUEUE, app
from fabricweb.names import INGEST_FABRIC, INGEST_SNAPSHOT, SNAPSHOT_UNACKED_KEY
from fabricweb.nodeauth import COLLECTOR

from .auth import NotAuthenticated, authenticated, check_unsigned
from .broker import transport_for
from .ingest import ingest_batch
from .jsonread import NotExact, exact_loads
from .redisread import BatchReader, give_back
from .results import REFUSED, STALE, STORED
from .shards import ShardLeases, new_consumer_id, unacked_keys

log = logging.getLogger(__name__)

ONE = INGEST_SNAPSHOT
FABRIC = INGEST_FABRIC
JSON = "application/json"
IDLE_WAIT_S = 1.0  # the longest one wait for a message blocks: a signal does not cut it short
MAX_BACKOFF_S = 30.0
# A real node's snapshot is 10-100 kB of JSON.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# A fabric collector's sweep is ~200 bytes per port of the fabric: room for the caps of fabric/schema.py.
MAX_FABRIC_MESSAGE_BYTES = 80 * 1024 * 1024
REPORT_EVERY_S = 60.0
REDELIVER_AFTER_S = 60.0
BROKER_TIMEOUT_S = 5.0
LEASE_S = 15.0  # several shards: a consumer silent this long is dead, its queues taken over
TAKE_EVERY_S = 0.02  # plain redis://: how often an idle consumer looks for messages (one cheap script call)
RESTORE_EVERY_S = 1.0  # ... and for messages a killed consumer left unacked past redeliver_after


def transport_options(redeliver_after: float, consumer_id: str | None = None) -> dict:
    """kombu Redis options of the consumer's connection (see the module docstring); with a
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
    }


MAX_ATTEMPTS = 3  # database errors with the database up before a message is given up


def _database_answers() -> bool:
    """Whether the database takes a query now: an outage is waited out, a failing snapshot is not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        with contextlib.suppress(DatabaseError):
            connection.close()
        return False


class Dropped(ValueError):
    """A message that can never be stored: acked at once, the reason logged."""


def message_id(message) -> str:
    return str((message.headers or {}).get("id") or message.delivery_tag)


def decode_body(message) -> object:
    """The JSON body as kombu decodes it, with orjson (~2.5x faster on a snapshot) where that reads the same.

    Anything orjson refuses (NaN, lone surrogates...) or might read differently (an integer past
    64 bits, which it makes a float) is left to kombu, so what is accepted and what
    it decodes to do not change (jsonread.py).
    """
    body = message.body
    if isinstance(body, bytes) and message.content_encoding == "utf-8":
        try:
            return exact_loads(body)
        except NotExact:
            pass
    return message.decode()


def snapshots_of(message) -> list:
    """The snapshots in a Celery protocol 2 message of ingest_snapshot (one) or ingest_fabric (one sweep);
    raise Dropped for anything else."""
    # The content type first: a body that is not JSON is never decoded, so never unpickled.
    if message.content_type != JSON:
        raise Dropped(f"content type {message.content_type!r}: only {JSON} is read")
    task = (message.headers or {}).get("task")
    if task not in (ONE, FABRIC):
        raise Dropped(f"task {task!r} is not an ingest task")
    size = len(message.body or b"")
    limit = MAX_FABRIC_MESSAGE_BYTES if task == FABRIC else MAX_MESSAGE_BYTES
    if size > limit:  # before decoding: a 143 MB message must not cost a gigabyte and a stall
        raise Dropped(f"{size} bytes, more than the {limit} a {'sweep' if task == FABRIC else 'node'}'s snapshots take")
    try:
        body = decode_body(message)
    except Exception as e:  # bad JSON, bad encoding: kombu raises several kinds
        raise Dropped(f"undecodable body ({type(e).__name__}: {e})") from None
    if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], list) and isinstance(body[1], dict)):
        raise Dropped("body is not [args, kwargs, embed]")
    args, kwargs = body[0], body[1]
    if task == FABRIC:
        if not args and "signature" in kwargs:
            return [FabricSnapshot(authenticated(kwargs, COLLECTOR))]
        check_unsigned()
        if len(args) + len(kwargs) != 1 or (kwargs and "snapshot" not in kwargs):
            raise Dropped(f"{task} takes one argument, snapshot")
        return [FabricSnapshot(args[0] if args else kwargs["snapshot"])]
    if task == ONE and not args and "signature" in kwargs:
        return [authenticated(kwargs)]
    check_unsigned()
    if len(args) + len(kwargs) != 1 or (kwargs and "snapshot" not in kwargs):
        raise Dropped(f"{task} takes one argument, snapshot")
    return [args[0] if args else kwargs["snapshot"]]


def log_result(result) -> None:
    if result.status == STALE:
        log.warning("ingest: %s (older than the last applied snapshot of the node)", result.summary())
    elif result.status == REFUSED:
        log.warning("ingest: %s", result.summary())
    elif result.status == STORED and (result.new_node or result.vanished or result.clock_backwards):
        log.info("ingest: %s%s", result.summary(), " (new node)" if result.new_node else "")
    else:
        log.debug("ingest: %s", result.summary())


class FabricSnapshot:
    """A fabric collector's sweep, as its message said (signature checked): stored in a batch of its own."""

    __slots__ = ("data",)

    def __init__(self, data: object) -> None:
        self.data = data


def _ingest(snaps: list):
    """ingest_batch for node snapshots; a fabric collector's sweep (alone in its batch) to fabric ingest."""
    if snaps and isinstance(snaps[0], FabricSnapshot):
        from fabricweb.fabric.ingest import ingest_fabric_batch

        return ingest_fabric_batch([s.data for s in snaps])
    return ingest_batch(snaps)


class BatchConsumer:
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
        self.reader: BatchReader | None = None  # plain redis://: batches taken in one round trip
        self.redeliver_after = redeliver_after
        self.consumer_id = new_consumer_id() if shards > 1 else None
        # A reader per connection takes as `<id>#<n>` (redisread): what one lost with its connection is
        # given back after redeliver_after, while this process goes on reading with the next.
        self.takers = (f"{self.consumer_id or new_consumer_id()}#{n}" for n in itertools.count(1))
        self.options = transport_options(redeliver_after, self.consumer_id)
        self.pending: list[tuple[object, list]] = []  # (message, its snapshots), oldest first
        self.oldest_at = 0.0
        self.stopping = False
        self.shown = ""  # the broker, for logs
        self.db_backoff = 0.0
        self.failures: dict[str, int] = {}  # message id -> database errors while the database answered
        # A batch the database could not take (down, locked): tried again before anything newer. Requeued
        # instead, it would go behind the polls queued meanwhile, and each node's older polls, stored after
        # its newer ones, would be stale: a database outage would cost every poll queued before it.
        self.held: list[tuple[object, list]] = []
        # Since start: batches, snapshots, samples, rejected, dropped, requeued (messages).
        self.totals: Counter[str] = Counter()
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
                if backoff:
                    log.warning("ingest: connected to the broker %s again", self.shown)
                backoff = 0.0
                client = None
                if self.shards > 1 or transport_for(url):
                    client = redis.Redis.from_url(
                        url or conn.as_uri(include_password=True),
                        socket_timeout=BROKER_TIMEOUT_S,
                        socket_connect_timeout=BROKER_TIMEOUT_S,
                    )
                if self.shards > 1 and self.leases is None:
                    self.leases = ShardLeases(client, self.shards, self.lease_s, self.consumer_id)
                previous, self.reader = self.reader, None
                if transport_for(url):
                    self.reader = BatchReader(client, self.options, next(self.takers))
                    if previous is not None:  # the batch in hand went with the connection: read it again first
                        give_back(client, previous.taker)
                self._consume(conn, until)
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

    def _consume(self, conn, until) -> None:
        if self.leases is None:
            self._read(conn, until, [SNAPSHOT_QUEUE])
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
                self._read(conn, until, queues)
            else:
                self._sleep(self.lease_s / 3)
        if self.stopping:
            self.leases.leave()  # the others take its queues at their next beat, not a lease later

    def _read(self, conn, until, names: list[str]) -> None:
        """Read `names` until done, or (several shards) until a beat changes the leases held."""
        if self.reader is not None:
            self._take(until, names)
            return
        # As Celery declares them (a direct exchange and routing key named like the queue), so
        # agents' send_task(queue=...) and this agree whichever side declares a queue first.
        queues = [app.amqp.queues[name] for name in names]
        next_beat = time.monotonic() + self.lease_s / 3
        with conn.Consumer(queues, on_message=self._receive, accept=["json"], prefetch_count=self.batch):
            self._say_reading(names)
            while not self._done(until):
                if len(self.pending) < self.batch:
                    with contextlib.suppress(socket.timeout):
                        conn.drain_events(timeout=self._wait_s(next_beat))
                full = len(self.pending) >= self.batch
                if self.pending and (full or time.monotonic() - self.oldest_at >= self.max_wait or self.stopping):
                    self.flush()
                self._report()
                if self.leases is not None and time.monotonic() >= next_beat:
                    if self._leases_changed():
                        break
                    next_beat = time.monotonic() + self.lease_s / 3
            self.flush()

    def _take(self, until, names: list[str]) -> None:
        """_read on a plain redis:// broker: take up to a batch of messages per round trip (redisread.py)."""
        reader = self.reader
        self._say_reading(names)
        next_beat = time.monotonic() + self.lease_s / 3
        next_restore = 0.0
        while not self._done(until):
            taken = reader.take(names, self.batch - len(self.pending))
            for message in taken:
                self._receive(message)
            full = len(self.pending) >= self.batch
            if self.pending and (full or time.monotonic() - self.oldest_at >= self.max_wait or self.stopping):
                self.flush()
            elif not taken:
                reader.commit_acks()  # messages dropped while nothing else came
                if time.monotonic() >= next_restore:
                    reader.restore_older_than(self.redeliver_after)
                    next_restore = time.monotonic() + RESTORE_EVERY_S
                self._sleep(min(TAKE_EVERY_S, self._wait_s(next_beat)))
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
        try:
            snaps = snapshots_of(message)
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

    def flush(self) -> None:
        """Store the batch in hand and ack it; on a database error keep it (or requeue it) and back off."""
        batch, self.pending = self.pending, []
        stored = not batch or self._store(batch)
        if self.reader is not None:
            self.reader.commit_acks()  # the batch's acks in one round trip, after its commit
        if not stored:
            self._sleep(self.db_backoff)
        if self.held:
            # Due again at once: the oldest first, then what came in meanwhile.
            self.pending, self.held = self.held + self.pending, []
            self.oldest_at = time.monotonic() - self.max_wait

    def _hand_back(self, batch: list[tuple[object, list]], database_down: bool) -> None:
        """Keep `batch` to try again first while the database is down; otherwise give it back to the broker."""
        if database_down and not self.stopping:
            self.held.extend(batch)
            self.totals["held"] += len(batch)
            return
        for message, _ in batch:
            message.requeue()
        self.totals["requeued"] += len(batch)

    def _store(self, batch: list[tuple[object, list]]) -> bool:
        """Store and ack `batch`; False if a database error had it requeued."""
        snaps = [s for _, ss in batch for s in ss]
        owner = [message for message, ss in batch for _ in ss]
        started = time.monotonic()
        try:
            close_old_connections()  # as Django does per request: drop a connection too old or broken
            out = _ingest(snaps)
        except DatabaseError as e:
            with contextlib.suppress(DatabaseError):
                connection.close()  # the next batch starts on a fresh connection
            # OperationalError is the database's state, not the data: down, a lock held past the busy
            # timeout (SQLite under a long prune), a deadlock. Waited out, never counted against a message.
            database_down = isinstance(e, OperationalError) or not _database_answers()
            if not database_down:
                # Something in this batch fails in the database (a constraint, a value it refuses). Alone,
                # each message is acked or fails on its own; one that keeps failing is given up, or it loops.
                if len(batch) > 1:
                    return all([self._store([item]) for item in batch])
                batch = self._give_up_on(batch)
                self.db_backoff = 1.0
            else:
                self.db_backoff = min(MAX_BACKOFF_S, 2 * self.db_backoff or 1.0)
            self._hand_back(batch, database_down)
            log.error(
                "ingest: database error (%s: %s); %d message(s) %s, trying again in %g s",
                type(e).__name__,
                str(e).strip(),
                len(batch),
                "kept in hand" if database_down and not self.stopping else "requeued",
                self.db_backoff,
            )
            return False
        except Exception:
            # Not the database: a snapshot ingest cannot handle. Find it rather than hold back the rest.
            if len(batch) > 1:
                log.exception("ingest: a batch of %d messages failed; storing them one by one", len(batch))
                for i, item in enumerate(batch):
                    if not self._store([item]):
                        self._hand_back(batch[i + 1 :], database_down=bool(self.held))
                        return False
                return True
            log.exception("ingest: message %s failed; dropped", message_id(batch[0][0]))
            self.totals["dropped"] += 1
            batch[0][0].ack()
            return True
        self.db_backoff = 0.0
        for rejection in out.rejected:
            log.warning("ingest: %s (message %s)", rejection.error, message_id(owner[rejection.index]))
        for result in out.results:
            log_result(result)
        # Only now, with the transaction committed: a message acked earlier could be lost with it.
        for message, _ in batch:
            message.ack()
        self.totals.update(
            batches=1, snapshots=len(out.results), samples=out.samples_written, rejected=len(out.rejected)
        )
        log.debug(
            "ingest: batch of %d messages: %d snapshots stored, %d rejected, %d port-samples in %.3f s",
            len(batch),
            len(out.results),
            len(out.rejected),
            out.samples_written,
            time.monotonic() - started,
        )
        return True

    def _give_up_on(self, batch: list[tuple[object, list]]) -> list[tuple[object, list]]:
        """Count a failure for each message; ack (drop) those at MAX_ATTEMPTS, return the others."""
        keep = []
        for message, snaps in batch:
            key = message_id(message)
            attempts = self.failures.pop(key, 0) + 1
            if attempts < MAX_ATTEMPTS:
                if len(self.failures) >= 10_000:  # ids of messages that later went through: forget them
                    self.failures.clear()
                self.failures[key] = attempts
                keep.append((message, snaps))
                continue
            log.error(
                "ingest: message %s failed in the database %d times while the database answered; dropped",
                key,
                attempts,
            )
            self.totals["dropped"] += 1
            message.ack()
        return keep

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
                "(%d batches; %d rejected, %d unauthenticated, %d dropped, %d requeued, %d held for the database)",
                done["snapshots"] / span,
                done["samples"] / span,
                span,
                done["batches"],
                done["rejected"],
                done["unauthenticated"],
                done["dropped"],
                done["requeued"],
                done["held"],
            )
