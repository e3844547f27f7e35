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
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone

from fabricweb.inventory.models import Node
from fabricweb.isotime import iso

from .handed import HANDED
from .results import REFUSED, STORED, IngestResult
from .signals import snapshots_ingested
from .storage import partitions, rowcache, store
from .storage.apply import Changes, apply_snapshot
from .storage.budget import NodeBudget
from .validation.schema import SnapshotIn, SnapshotRejected, parse_snapshot

log = logging.getLogger(__name__)

CLOCK_STEP_BACK = timedelta(hours=1)  # how far back (server clock) a node's corrected clock may create an hour

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
            # (typed already: checked as it was read, at an earlier clock: intake/messages.py)
            parsed.append((i, data if type(data) is SnapshotIn else parse_snapshot(data, now)))
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
    # Kept even inside an enclosing transaction: if that one rolls back, so do the nodes' tokens (see rowcache).
    cache = rowcache.CACHE
    with transaction.atomic():
        refused = _backdated(ordered, now)
        # Before any row lock: creating an hour's partition of samples may wait for other writers' commits.
        partitions.SAMPLES.ensure(snap.collected_at for i, snap in ordered if i not in refused)
        rows = store.load_nodes(first_seen, cache)
        taken = [name for name, r in rows.items() if r.node.kind in (Node.Kind.SWITCH, Node.Kind.ADAPTER)]
        if taken:  # a switch (or adapter) took it first: the host takes its name back (fabricweb.fabric.hostnames)
            for name in taken:
                HANDED.yield_to_host(rows[name].node)
            rows.update(store.load_nodes({name: first_seen[name] for name in taken}, cache))
        changes = Changes()
        budget = NodeBudget.current()  # once a batch, not once a snapshot
        results = {
            i: refused.get(i) or apply_snapshot(snap, rows[snap.host], changes, now, budget=budget)
            for i, snap in ordered
        }
        store.write(changes)
        stored = [r for r in results.values() if r.status == STORED]
        if stored:
            snapshots_ingested.send(sender=IngestResult, results=stored)
    cache.keep(rows.values())  # as this process wrote them
    return results


def _backdated(ordered: list[tuple[int, SnapshotIn]], now: datetime) -> dict[int, IngestResult]:
    """Snapshots refused because they would create a partition of samples (PostgreSQL) they have no business in.

    A node's polls create the partitions of their hours as they arrive, in order, or late after an outage;
    the future is bounded by FUTURE_TOLERANCE. A snapshot dated at or before the node's last stored poll
    (a clock step) more than CLOCK_STEP_BACK before this server's now, or more than FABRIC_RETAIN_RAW
    before the newest samples, is stored only into an hour that has its partition already: a node with
    rising counters could otherwise date each snapshot an hour further back and have a table created for
    each. So one node can have created only the hours from CLOCK_STEP_BACK before now on, and those of its
    polls in order within retention. Only hours this process has not seen are looked at.
    """
    if not partitions.partitioned():
        return {}
    unseen = [(i, snap) for i, snap in ordered if not partitions.SAMPLES.known(snap.collected_at)]
    if not unseen:
        return {}
    last = dict(
        Node.objects.filter(name__in={snap.host for _, snap in unseen}).values_list("name", "last_collected_at")
    )
    spans = None
    refused = {}
    for i, snap in unseen:
        before = last.get(snap.host)
        if before is not None and snap.collected_at <= before:
            if snap.collected_at >= now - CLOCK_STEP_BACK:
                continue  # NTP setting a fast clock right: by this server's clock, never further back than this
            hours = CLOCK_STEP_BACK / timedelta(hours=1)
            why = f"not after its last stored poll ({iso(before)}) and more than {hours:g} h before this server's clock"
        else:
            spans = partitions.SAMPLES.spans() if spans is None else spans
            floor = spans[-1] - timedelta(seconds=settings.FABRIC_RETAIN_RAW) if spans else None
            if floor is None or snap.collected_at >= floor:
                continue
            why = "more than FABRIC_RETAIN_RAW before the newest samples"
        if partitions.SAMPLES.has(snap.collected_at):
            continue
        note = f"dated {iso(snap.collected_at)}, {why}: its hour has no partition of samples, and may not get one"
        refused[i] = IngestResult(snap.host, snap.collected_at, REFUSED, note=note)
    return refused
