"""Outbox rows and timers -> threads and deliveries, in one transaction per pass.

Per channel and event key, a Thread says what the channel has been told:

    event opens (severity routed here) -> pending until opened_at + wait_s (`for`)
    pending, due, event open, not silenced -> grouped with the others due within group_s: one
        "firing" delivery; the threads are firing
    pending, event resolved (within `for`)  -> thread dropped: nobody is paged
    firing, event resolved                  -> resolving until resolved_at + flap_hold_s
    resolving, the key opens again          -> firing again, no new page (one thread per flap episode)
    resolving, due                          -> one "resolved" delivery for all due; thread dropped
    firing, critical, unacknowledged, not silenced, repeat_s passed -> "repeat" delivery
    firing, its severity rose above the one announced (warning -> critical) -> "firing" again
    firing on an Alertmanager channel, REFRESH_S passed -> re-sent (Alertmanager resolves
        alerts nobody repeats; it does its own repeating and grouping)

A silence keeps a thread pending (it is sent if the event is still open when the silence
ends) and stops repeats; the event itself stays open and visible. Routing reads the
events as they are now, so an outbox row that is already out of date does no harm.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from fabricweb.health.models import Event, Silence, silencing
from fabricweb.health.signals import RESOLVED
from fabricweb.jobs.impact import jobs_for_events

from . import payload
from .models import Channel, Delivery, Outbox, Thread
from .transports.alertmanager import REFRESH_S

log = logging.getLogger(__name__)

OUTBOX_BATCH = 5000
EVENT_RELATED = ("node", "device", "port", "port__peer__device__node", "acknowledgement")


@dataclass(slots=True)
class RouteReport:
    changes: int = 0
    deliveries: list[Delivery] = field(default_factory=list)
    next_due: datetime | None = None  # the earliest timer still running

    def due(self, at: datetime) -> None:
        if self.next_due is None or at < self.next_due:
            self.next_due = at


def route(now: datetime | None = None) -> RouteReport:
    """One pass: consume the outbox, run the timers, create the deliveries. Call it from one process at a time."""
    now = now or timezone.now()
    report = RouteReport()
    with transaction.atomic():
        channels = list(Channel.objects.filter(enabled=True).exclude(kind=""))
        rows = list(Outbox.objects.order_by("id")[:OUTBOX_BATCH])
        if not channels:
            Outbox.objects.filter(pk__in=[r.pk for r in rows]).delete()
            return report
        threads = {
            (t.channel_id, t.key): t
            for t in Thread.objects.filter(channel__in=channels).select_related(
                *(f"event__{name}" for name in EVENT_RELATED)
            )
        }
        changed: dict[tuple[int, str], Thread] = {}
        dropped: dict[tuple[int, str], Thread] = {}
        if rows:
            events = Event.objects.select_related(*EVENT_RELATED).in_bulk({r.event_id for r in rows})
            for row in rows:
                event = events.get(row.event_id)
                if event is None:
                    continue
                for channel in channels:
                    _apply(channel, event, row.change, threads, changed, dropped)
            Outbox.objects.filter(pk__in=[r.pk for r in rows]).delete()
            report.changes = len(rows)
        silences = list(Silence.objects.active(now))
        by_channel: dict[int, list[Thread]] = defaultdict(list)
        for (channel_id, _key), thread in threads.items():
            by_channel[channel_id].append(thread)
        for channel in channels:
            _timers(channel, by_channel[channel.pk], silences, now, report, changed, dropped)
        for thread in dropped.values():
            if thread.pk is not None:
                thread.delete()
        for key, thread in changed.items():
            if key not in dropped:
                thread.save()
        Delivery.objects.bulk_create(report.deliveries)
    if report.deliveries:
        log.info("alerts: %d notification(s) routed", len(report.deliveries))
    return report


def _apply(channel: Channel, event: Event, change: str, threads, changed, dropped) -> None:
    key = (channel.pk, event.key)
    thread = threads.get(key)
    if event.is_open and change != RESOLVED:
        routed = event.severity in channel.severities
        if thread is None:
            if routed:
                due = event.opened_at + timedelta(seconds=channel.wait_s)
                # A thread of this key dropped earlier in this pass is its row: reuse it (one row per key).
                thread = dropped.pop(key, None) or Thread(channel=channel, key=event.key)
                thread.event, thread.state, thread.due_at = event, Thread.State.PENDING, due
                thread.sent_at, thread.sent_severity, thread.bounces = None, "", 0
                threads[key] = changed[key] = thread
        elif thread.state == Thread.State.PENDING:
            thread.event = event
            changed[key] = thread
            if not routed:  # its severity dropped below what this channel gets before anything was sent
                dropped[key] = threads.pop(key)
        elif thread.state == Thread.State.RESOLVING:  # reopened within the flap hold: the same thread goes on
            thread.event, thread.state = event, Thread.State.FIRING
            thread.bounces += 1
            changed[key] = thread
        else:
            thread.event = event
            changed[key] = thread
    elif thread is not None and thread.event_id == event.pk:
        if thread.state == Thread.State.PENDING:  # cleared within `for` (or while silenced): nobody is paged
            dropped[key] = threads.pop(key)
        elif thread.state == Thread.State.FIRING:
            thread.event = event
            thread.state = Thread.State.RESOLVING
            thread.due_at = (event.resolved_at or event.updated_at) + timedelta(seconds=channel.flap_hold_s)
            changed[key] = thread


def _timers(channel: Channel, threads: list[Thread], silences, now: datetime, report, changed, dropped) -> None:
    firing, resolved, repeat, escalated = [], [], [], []
    pending_due = []
    for thread in threads:
        key = (channel.pk, thread.key)
        if key in dropped:
            continue
        event = thread.event
        if thread.state == Thread.State.PENDING:
            if not event.is_open:
                continue  # its resolution is in the outbox; the thread is dropped when that is read
            if thread.due_at <= now and not silencing(event, silences):
                pending_due.append(thread)
            elif thread.due_at > now:
                report.due(thread.due_at)
        elif thread.state == Thread.State.RESOLVING:
            if thread.due_at <= now:
                resolved.append(thread)
            else:
                report.due(thread.due_at)
        elif thread.state == Thread.State.FIRING:
            every = _repeat_every(channel, event)
            if _escalated(thread) and not silencing(event, silences):
                escalated.append(thread)
            elif every and not silencing(event, silences):
                if thread.sent_at is None or thread.sent_at + timedelta(seconds=every) <= now:
                    repeat.append(thread)
                else:
                    report.due(thread.sent_at + timedelta(seconds=every))
    if pending_due:
        # Group: wait until the first has been due group_s, so a burst (a switch taking 36 ports down) is one page.
        first = min(t.due_at for t in pending_due)
        ready_at = first + timedelta(seconds=channel.group_s)
        if ready_at <= now:
            firing = pending_due
        else:
            report.due(ready_at)
    firing = firing + escalated
    for reason, group in (("firing", firing), ("repeat", repeat), ("resolved", resolved)):
        if not group:
            continue
        group.sort(key=lambda t: (t.event.opened_at, t.key))
        report.deliveries.append(_delivery(channel, reason, group, now))
        for thread in group:
            key = (channel.pk, thread.key)
            if reason == "resolved":
                dropped[key] = thread
                continue
            thread.state, thread.sent_at = Thread.State.FIRING, now
            thread.sent_severity = thread.event.severity
            changed[key] = thread
            every = _repeat_every(channel, thread.event)
            if every:
                report.due(now + timedelta(seconds=every))


def _escalated(thread: Thread) -> bool:
    """Its event is now more severe than what was announced (an empty sent_severity: nothing to compare)."""
    order = ("critical", "warning", "info")
    sent, now = thread.sent_severity, thread.event.severity
    return sent in order and now in order and order.index(now) < order.index(sent)


def _repeat_every(channel: Channel, event: Event) -> float:
    if channel.kind == Channel.Kind.ALERTMANAGER:
        return REFRESH_S
    if channel.repeat_s and event.severity == Event.Severity.CRITICAL and not hasattr(event, "acknowledgement"):
        return channel.repeat_s
    return 0.0


def _delivery(channel: Channel, reason: str, threads: list[Thread], now: datetime) -> Delivery:
    uid = uuid.uuid4()
    jobs = jobs_for_events([t.event for t in threads])
    items = [payload.event_item(t.event, jobs.get(t.event.pk, [])) for t in threads]
    return Delivery(
        uid=uid,
        channel=channel,
        reason=reason,
        keys="\n".join(t.key for t in threads),
        payload=payload.build(str(uid), channel.name, reason, items, now),
        created_at=now,
        next_attempt_at=now,
    )


def make_test_delivery(channel: Channel, now: datetime | None = None) -> Delivery:
    """A "send test notification": a made-up event on node `fabricweb-test`, queued like any other."""
    now = now or timezone.now()
    uid = uuid.uuid4()
    item = {
        "key": "test:fabricweb-test",
        "kind": "test",
        "severity": "info",
        "node": "fabricweb-test",
        "device": None,
        "port": None,
        "message": f"fabricweb-test: test notification for channel {channel.name}",
        "reason": "sent from the admin to check the channel",
        "opened_at": payload.iso(now),
        "resolved_at": None,
        "expected_link": None,
        "actual_link": None,
        "acknowledged_by": None,
        "url": payload.port_url("fabricweb-test", None, None),
        "switch": None,
    }
    return Delivery.objects.create(
        uid=uid,
        channel=channel,
        reason="test",
        keys=item["key"],
        payload=payload.build(str(uid), channel.name, "test", [item], now),
        created_at=now,
        next_attempt_at=now,
    )
