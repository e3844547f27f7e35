"""Storing the ingest consumer's batch in hand: one ingest_batch call (a fabric collector's sweep: the store the
fabric app hands over, telemetry.handed), acked only after the commit.

A database error keeps the batch in hand while the database is down (tried again first, before
anything newer) or, stopping, gives it back to the broker; an error of the data while the database
answers is found message by message, and a message failing MAX_ATTEMPTS times is dropped. Anything
else a snapshot makes ingest raise is found the same way, and that message dropped. Mixed into
consumer.BatchConsumer (StoresBatches), whose state it keeps: held, totals, failures, db_backoff, stopping.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter

from django.db import DatabaseError, OperationalError, close_old_connections, connection

from ..handed import HANDED
from ..ingest import ingest_batch
from ..results import REFUSED, STALE, STORED
from .messages import FabricSnapshot, message_id

# The consumer's log: these lines are its own (`manage.py ingest`).
log = logging.getLogger("fabricweb.telemetry.intake.consumer")

MAX_BACKOFF_S = 30.0
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


def log_result(result) -> None:
    if result.status == STALE:
        log.warning("ingest: %s (older than the last applied snapshot of the node)", result.summary())
    elif result.status == REFUSED:
        log.warning("ingest: %s", result.summary())
    elif result.status == STORED and (result.new_node or result.vanished or result.clock_backwards):
        log.info("ingest: %s%s", result.summary(), " (new node)" if result.new_node else "")
    else:
        log.debug("ingest: %s", result.summary())


def _ingest(snaps: list):
    """ingest_batch for node snapshots; a fabric collector's sweep (alone in its batch) to fabric ingest."""
    if snaps and isinstance(snaps[0], FabricSnapshot):
        return HANDED.sweeps([s.data for s in snaps])
    return ingest_batch(snaps)


class StoresBatches:
    """The consumer's storing of a batch and its answer to failures (the module docstring)."""

    held: list[tuple[object, list]]
    totals: Counter[str]
    failures: dict[str, int]
    db_backoff: float
    stopping: bool

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
