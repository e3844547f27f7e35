"""Nodes that stopped sending snapshots: open (and keep up to date) their stale event.

Only the stale key is touched here (lifecycle: pass every open event of what was
judged, and this judges nothing else). A stale event is resolved by ingest: each
snapshot the node sends again is a clean poll for it, so it resolves after
FABRIC_RESOLVE_AFTER snapshots in a row, and a node that sends one snapshot now
and then stays one event instead of opening a new one each time it goes quiet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabricweb.inventory.models import Node

from . import context, lifecycle
from .events import EventBook
from .findings import Kind
from .rules import judge_node


@dataclass(frozen=True, slots=True)
class StaleReport:
    stale: list[str]  # nodes past the threshold, by name
    opened: int
    updated: int


def check_stale(now: datetime | None = None) -> StaleReport:
    """Judge every node whose last snapshot landed more than `stale_after_polls` poll intervals ago."""
    now = now or timezone.now()
    interval = float(settings.FABRIC_POLL_INTERVAL)
    t = context.thresholds()
    cutoff = now - timedelta(seconds=t.stale_after_polls * interval)
    with transaction.atomic():
        # A node being ingested right now is locked and certainly not stale: skip it rather than wait.
        # Switches are not polled: the fabric collectors' sweeps read them, and their own rule says when
        # a switch is no longer reached (fabricweb.fabric.judge).
        nodes = list(
            Node.objects.select_for_update(skip_locked=True)
            .filter(last_ingested_at__lt=cutoff)
            .exclude(kind=Node.Kind.SWITCH)
            .order_by("name")
        )
        if not nodes:
            return StaleReport([], 0, 0)
        book = EventBook.for_nodes((n.pk for n in nodes), kind=Kind.STALE)
        resolve_after = context.resolve_after()
        for node in nodes:
            missed = int((now - node.last_ingested_at).total_seconds() // interval)
            judgement = judge_node(node.name, missed, interval, t, collector=node.kind == Node.Kind.COLLECTOR)
            targets = {node.name: (None, None)}
            actions = lifecycle.step(book.open_for(targets), judgement.findings, judgement.unknown, resolve_after)
            book.apply(actions, node, targets, now)
        book.write()
    return StaleReport([n.name for n in nodes], book.tally.opened, book.tally.updated)
