"""Nodes that stopped taking their polls: open (and keep up to date) their stale event, and mark them stale.

A node is stale once it has missed `stale_after_polls` polls in a row that it was sent: polls
dispatch found still waiting in its queue a whole interval later (fabricweb/pollledger.py).
Never by the clock alone: a beat that starts late or restarts, or ingest that falls behind,
makes no node miss a poll.

Only the stale key is touched here (lifecycle: pass every open event of what was
judged, and this judges nothing else). A stale event is resolved by ingest: each
snapshot the node sends again is a clean poll for it, so it resolves after
FABRIC_RESOLVE_AFTER snapshots in a row, and a node that sends one snapshot now
and then stays one event instead of opening a new one each time it goes quiet.
Node.stale, what every surface shows as "unknown", is cleared by its first snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabricweb.inventory.models import Node

from ..rules import judge_node
from ..rules.findings import Kind
from . import context, lifecycle
from .events import EventBook


@dataclass(frozen=True, slots=True)
class StaleReport:
    stale: list[str]  # nodes past the threshold, by name
    opened: int
    updated: int


def check_stale(missed: Mapping[str, int], now: datetime | None = None) -> StaleReport:
    """Judge every node that has missed `stale_after_polls` polls or more in a row (`missed`: the ledger's
    counts of the nodes still holding an untaken poll)."""
    now = now or timezone.now()
    interval = float(settings.FABRIC_POLL_INTERVAL)
    t = context.thresholds()
    due = {name: count for name, count in missed.items() if count >= t.stale_after_polls}
    if not due:
        return StaleReport([], 0, 0)
    with transaction.atomic():
        # A node being ingested right now is locked and is answering: skip it rather than wait.
        # Switches are not polled: the fabric collectors' sweeps read them, and their own rule says when
        # a switch is no longer reached (fabricweb.fabric.judge).
        nodes = list(
            Node.objects.select_for_update(skip_locked=True)
            .filter(name__in=sorted(due))
            .exclude(kind=Node.Kind.SWITCH)
            .order_by("name")
        )
        if not nodes:
            return StaleReport([], 0, 0)
        book = EventBook.for_nodes((n.pk for n in nodes), kind=Kind.STALE)
        resolve_after = context.resolve_after()
        for node in nodes:
            collector = node.kind == Node.Kind.COLLECTOR
            judgement = judge_node(
                node.name, due[node.name], interval, t, collector=collector, refused=node.refused_reason
            )
            targets = {node.name: (None, None)}
            actions = lifecycle.step(book.open_for(targets), judgement.findings, judgement.unknown, resolve_after)
            book.apply(actions, node, targets, now)
        book.write()
        Node.objects.filter(pk__in=[n.pk for n in nodes if not n.stale]).update(stale=True)
    return StaleReport([n.name for n in nodes], book.tally.opened, book.tally.updated)
