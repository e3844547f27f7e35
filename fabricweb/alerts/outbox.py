"""Event changes -> outbox rows, in the transaction that changed the events.

Connected to fabricweb.health.signals.events_changed (AlertsConfig.ready). Cost on the
ingest path: nothing when no event changed; otherwise one query (is any channel enabled?)
and one bulk INSERT. After the commit a `tick` is sent so routing runs at once; if that
send fails (broker down) the periodic tick finds the rows anyway: nothing is lost once
the transaction has committed.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from fabricweb.names import ALERTS_TICK

from .models import Channel, Outbox

log = logging.getLogger(__name__)

TICK = ALERTS_TICK


def on_events_changed(sender, changes, **kwargs) -> None:
    if not changes or not Channel.objects.filter(enabled=True).exists():
        return
    now = timezone.now()
    Outbox.objects.bulk_create(Outbox(event_id=event.pk, change=change, at=now) for event, change in changes)
    transaction.on_commit(kick)


def kick(countdown: float = 0) -> None:
    """Ask the alerts worker to route and deliver now (or after `countdown` s); best effort."""
    from fabricweb.celery import app

    try:
        app.send_task(TICK, countdown=countdown or None, expires=max(60.0, countdown * 2))
    except Exception as e:  # the periodic tick covers it; a notification must never fail ingest
        log.warning("alerts: could not send a tick (%s); the periodic one will route", e)
