"""Vanished devices and ports retire FABRIC_VANISHED_RETIRE_AFTER after they vanished: their open events are
resolved, and the rows (with their rollups) deleted.

Ingest judges a missing port once, as it vanishes, and leaves it alone after (telemetry/storage/budget.py);
its event stays open until the port returns or retires here. The events are kept as history, detached
from the rows: their key and message still name the node, device and port. A port that comes back later
is a new port. Run hourly with the prune job (beat: retire-vanished).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from fabricweb.inventory import rowwrites
from fabricweb.inventory.models import Device, Node, Port

from ..models import Event
from ..rules.common import fmt_s
from .events import EventBook
from .lifecycle import Action, Op

log = logging.getLogger(__name__)


def _span(seconds: float) -> str:
    for unit, length in (("d", 86400), ("h", 3600)):
        if seconds >= 2 * length:
            return f"{seconds / length:g} {unit}"
    return fmt_s(seconds)


@dataclass(frozen=True, slots=True)
class RetireReport:
    devices: int
    ports: int
    resolved: int


def retire_vanished(now: datetime | None = None) -> RetireReport:
    """Retire every device and port that vanished FABRIC_VANISHED_RETIRE_AFTER ago or more."""
    now = now or timezone.now()
    after_s = float(settings.FABRIC_VANISHED_RETIRE_AFTER)
    cutoff = now - timedelta(seconds=after_s)
    with transaction.atomic():
        devices = dict(Device.objects.filter(vanished_at__lte=cutoff).values_list("pk", "node_id"))
        ports = dict(
            Port.objects.filter(Q(vanished_at__lte=cutoff) | Q(device_id__in=list(devices))).values_list(
                "pk", "device__node_id"
            )
        )
        if not devices and not ports:
            return RetireReport(0, 0, 0)
        about = Q(device_id__in=list(devices)) | Q(port_id__in=list(ports))
        node_ids = set(devices.values()) | set(ports.values())
        book = EventBook(Event.objects.filter(about, resolved_at__isnull=True).select_related("node"))
        reason = f"retired: vanished more than {_span(after_s)} ago"
        by_node: dict[int, list[Event]] = {}
        for event in book.open.values():
            by_node.setdefault(event.node_id, []).append(event)
        for events in by_node.values():
            actions = [
                Action(Op.RESOLVE, e.key, e.kind, e.severity, e.message, e.clean_polls, e.details, reason)
                for e in events
            ]
            book.apply(actions, events[0].node, {}, now)
        book.write()
        # History stays: the events keep their node, key and message.
        Event.objects.filter(about).update(device=None, port=None)
        Port.objects.filter(pk__in=list(ports)).delete()
        Device.objects.filter(pk__in=list(devices)).delete()
        rowwrites.invalidate(node_ids)  # every ingest process drops the rows it holds of these nodes
    report = RetireReport(len(devices), len(ports), book.tally.resolved)
    names = ", ".join(Node.objects.filter(pk__in=node_ids).order_by("name").values_list("name", flat=True)[:10])
    log.info("health: retired %d devices and %d ports vanished before %s (%s)", len(devices), len(ports), cutoff, names)
    return report
