"""What every page says about itself: how fresh the data is, how often it refreshes, what the user may do."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Max

from fabricweb.health.records.freshness import is_old, stale_after
from fabricweb.inventory.models import Node

from ..models import OPERATE


def freshness(now: datetime, last_ingest: datetime | None = None, *, known: bool = False) -> dict:
    """Context for the stale banner: data older than 3 polls (no ingest) is said, not shown silently."""
    if not known:
        last_ingest = Node.objects.aggregate(latest=Max("last_ingested_at"))["latest"]
    stale = last_ingest is not None and is_old(last_ingest, now)
    return {
        "now": now,
        "last_ingest": last_ingest,
        "data_stale": stale,
        "data_age_s": None if last_ingest is None else int((now - last_ingest).total_seconds()),
        "stale_after_s": int(stale_after().total_seconds()),
        "refresh_ms": int(settings.FABRIC_POLL_INTERVAL * 1000),
        "refresh_s": f"{settings.FABRIC_POLL_INTERVAL:g}",
    }


def can_operate(user) -> bool:
    return user.is_authenticated and user.has_perm(OPERATE)


def require_operator(request) -> None:
    if not can_operate(request.user):
        raise PermissionDenied("operators only: acknowledge, silence and accept baselines")


def mark_page(events, now: datetime) -> None:
    """Acknowledgement and silence of each event, whether it is new, its columns (where, what), and the running
    jobs crossing its link, for the templates (one query for the silences, a few for the jobs; the events'
    port__peer__device__node loaded)."""
    from fabricweb.jobs.impact import jobs_for_events

    from .. import newness, porthealth, problemrows, rowactions

    rows = list(events)
    porthealth.mark_silenced(rows, now)
    newness.mark_new(rows, now)
    problemrows.mark_rows(rows)
    jobs = jobs_for_events(rows)
    for event in rows:
        event.jobs = jobs.get(event.pk, [])
        event.ack = porthealth.acknowledgement(event)
        event.why = rowactions.why(event)
