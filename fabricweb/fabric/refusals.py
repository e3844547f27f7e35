"""A fabric collector whose sweeps keep being refused is stale, and says why.

Sweeps are refused when they are dated at or before the last one applied (and not after that one's arrival:
ingest._not_applied): its clock stepped back, or the sweeps are replayed. The switches are then not read,
though the collector takes its polls, so the poll ledger never finds it stale. After REFUSED_POLLS such
sweeps in a row its Node says why (refused_reason: its page, the API, /healthz degraded), and its `stale`
event (the same one a silent collector gets, so one notification whichever way it goes blind) says so too.
The next sweep applied clears both.
"""

from __future__ import annotations

from datetime import datetime

from fabricweb.health.records import lifecycle
from fabricweb.health.records.events import EventBook
from fabricweb.health.rules.findings import Finding, Kind, Severity, node_key
from fabricweb.inventory.models import Node

from .models import Sweep

REFUSED_POLLS = 3
ALREADY = "already applied"


def judge_refused(collector: Node, now: datetime) -> None:
    last = list(Sweep.objects.filter(collector=collector).order_by("-stored_at", "-id")[:REFUSED_POLLS])
    if len(last) < REFUSED_POLLS or any(s.applied or not s.note.startswith(ALREADY) for s in last):
        return
    applied = Sweep.objects.filter(collector=collector, applied=True).order_by("-stored_at").first()
    since = f" (the last applied is dated {applied.collected_at:%Y-%m-%d %H:%M:%S} UTC)" if applied else ""
    reason = (
        f"its last {REFUSED_POLLS} sweeps were dated at or before the last one applied{since}: "
        "its clock stepped back, or old sweeps are replayed"
    )
    collector.refused_reason, collector.refused_at = reason, now
    collector.refused_snapshots += 1
    collector.save(update_fields=["refused_reason", "refused_at", "refused_snapshots"])
    message = (
        f"{collector.name}: no fabric sweep applied for {REFUSED_POLLS} polls: {reason}; the switches are not read"
    )
    _event(collector, [Finding(Kind.STALE, Severity.WARNING, node_key(Kind.STALE, collector.name), message)], now)


def clear_refused(collector: Node, now: datetime) -> None:
    if not collector.refused_reason:
        return
    collector.refused_reason = ""
    collector.save(update_fields=["refused_reason"])
    _event(collector, [], now)


def _event(collector: Node, findings: list[Finding], now: datetime) -> None:
    book = EventBook.for_nodes([collector.pk], kind=Kind.STALE)
    targets = {collector.name: (None, None)}
    book.apply(lifecycle.step(book.open_for(targets), findings, resolve_after=1), collector, targets, now)
    book.write()
