"""Store node snapshots: validate, compute deltas, write samples and current state, call the health hook.

- Validation comes first and is complete (fabricweb.telemetry.validation.schema): a malformed or
  unknown-schema snapshot raises SnapshotRejected with the reason and nothing is stored.
- One transaction per call: all of a batch or none of it. A batch that fails in the
  database is retried one snapshot per transaction, so one bad snapshot cannot hold
  back the others (the error is raised after them); a snapshot is never half-stored.
- Idempotent: a node's snapshot already applied (same collected_at) is a duplicate,
  and an older one is stale and changes nothing (see storage.apply.classify for clock steps).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone

from .results import STORED, IngestResult
from .signals import snapshots_ingested
from .storage import partitions, rowcache, store
from .storage.apply import Changes, apply_snapshot
from .validation.schema import SnapshotIn, SnapshotRejected, parse_snapshot

log = logging.getLogger(__name__)

__all__ = ["BatchResult", "Rejection", "SnapshotRejected", "ingest_batch", "ingest_snapshot"]


@dataclass(frozen=True, slots=True)
class Rejection:
    index: int  # position in the batch
    error: SnapshotRejected

    @property
    def reason(self) -> str:
        return self.error.reason


@dataclass(slots=True)
class BatchResult:
    results: list[IngestResult] = field(default_factory=list)  # input order, rejected ones left out
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def samples_written(self) -> int:
        return sum(r.samples_written for r in self.results)


def ingest_snapshot(snapshot: object, *, now: datetime | None = None) -> IngestResult:
    """Validate and store one snapshot in one transaction; raise SnapshotRejected if it is malformed."""
    batch = ingest_batch([snapshot], now=now)
    if batch.rejected:
        raise batch.rejected[0].error
    return batch.results[0]


def ingest_batch(snapshots: Sequence[object], *, now: datetime | None = None) -> BatchResult:
    """Validate and store many snapshots (any nodes, any order) in one transaction.

    Rejected snapshots are reported in `rejected` and do not stop the others.
    """
    now = now or timezone.now()
    out = BatchResult()
    parsed: list[tuple[int, SnapshotIn]] = []
    for i, data in enumerate(snapshots):
        try:
            parsed.append((i, parse_snapshot(data, now)))
        except SnapshotRejected as e:
            out.rejected.append(Rejection(i, e))
    if not parsed:
        return out
    try:
        results = _store(parsed, now)
    except OperationalError:
        raise  # the database's state (down, locked), not one snapshot's: one by one would fail the same
    except DatabaseError:
        if len(parsed) == 1:
            raise
        log.warning("ingest: a batch of %d snapshots failed in the database; storing them one by one", len(parsed))
        results, failed = {}, None
        for item in parsed:
            try:
                results.update(_store([item], now))
            except DatabaseError as e:
                log.exception("ingest: snapshot from %s at %s failed in the database", item[1].host, item[1].ts)
                failed = failed or e
        if failed is not None:
            # The others are stored; a retry of the batch finds them as duplicates.
            raise failed from None
    out.results = [results[i] for i, _ in parsed]
    return out


def _store(parsed: list[tuple[int, SnapshotIn]], now: datetime) -> dict[int, IngestResult]:
    # Per node in time order, so deltas and staleness are judged against the one before.
    ordered = sorted(parsed, key=lambda item: (item[1].host, item[1].ts))
    first_seen: dict[str, datetime] = {}
    for _, snap in ordered:
        first_seen.setdefault(snap.host, snap.collected_at)
    # Rows are reused between batches only when this is the outermost transaction (see rowcache).
    cache = None if transaction.get_connection().in_atomic_block else rowcache.CACHE
    with transaction.atomic():
        # Before any row lock: creating an hour's partition of samples may wait for other writers' commits.
        partitions.SAMPLES.ensure(snap.collected_at for _, snap in ordered)
        rows = store.load_nodes(first_seen, cache)
        changes = Changes()
        results = {i: apply_snapshot(snap, rows[snap.host], changes, now) for i, snap in ordered}
        store.write(changes)
        stored = [r for r in results.values() if r.status == STORED]
        if stored:
            snapshots_ingested.send(sender=IngestResult, results=stored)
    if cache is not None:
        cache.keep(rows.values())  # committed: as this process wrote them
    return results
