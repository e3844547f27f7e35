"""`/events/`: open and resolved events with filters (state, severity, kind, node, a time range),
acknowledgements, silences and the operator's forms; `?format=csv` exports what the filters select."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.shortcuts import render
from django.utils import timezone

from fabricweb.health.models import Event, Silence

from .. import csvexport, porthealth
from ..eventrange import EventsQuery
from ..forms import AcknowledgeForm, SilenceForm, glob_filter
from .common import can_operate, freshness, mark_page

PER_PAGE = 50
# "silenced" is decided in Python (globs); it looks at this many open events at most.
SILENCED_SCAN = 5000
EXPORT_MAX = 100_000  # rows in one CSV export
EXPORT_CHUNK = 1000  # events marked (acknowledged, silenced) at a time
CSV_HEADER = [
    "severity", "kind", "node", "device", "port", "message", "reason", "opened (UTC)", "updated (UTC)",
    "resolved (UTC)", "acknowledged by", "acknowledged at (UTC)", "acknowledgement note", "silenced until (UTC)",
]  # fmt: skip


@login_required
def event_list(request):
    now = timezone.now()
    form = EventsQuery(request.GET)
    context = {
        "form": form,
        "can_operate": can_operate(request.user),
        "silences": list(Silence.objects.active(now)),
        "silence_form": SilenceForm(initial={"ends_at": now + timedelta(hours=4)}),
        "ack_form": AcknowledgeForm(),
        **freshness(now),
    }
    if not form.is_valid():
        return render(request, "dashboard/events.html", context, status=400)
    given = form.cleaned_data
    status = given.get("status") or "open"
    rows = _matching(form, status, now)
    if status == "silenced":
        rows = _silenced(rows, now)
    if given.get("format") == "csv":
        return csvexport.response(f"events-{now:%Y%m%d-%H%M}.csv", CSV_HEADER, _csv_rows(rows, now))
    page = Paginator(rows, PER_PAGE).get_page(given.get("page"))
    mark_page(page, now)
    csv_query = request.GET.copy()
    csv_query.pop("page", None)
    csv_query["format"] = "csv"
    context.update(events=page, status=status, csv_query=csv_query.urlencode(), window=form.window(now))
    return render(request, "dashboard/events.html", context)


def _matching(form: EventsQuery, status: str, now):
    given = form.cleaned_data
    rows = Event.objects.select_related("node", "device", "port__peer__device__node", "acknowledgement")
    if status in ("open", "acknowledged", "silenced"):
        rows = rows.filter(resolved_at__isnull=True)
    elif status == "resolved":
        rows = rows.filter(resolved_at__isnull=False)
    if status == "acknowledged":
        rows = rows.filter(acknowledgement__isnull=False)
    if given.get("severity"):
        rows = rows.filter(severity=given["severity"])
    if given.get("kind"):
        rows = rows.filter(**glob_filter("kind", given["kind"]))
    if given.get("node"):
        rows = rows.filter(**glob_filter("node__name", given["node"]))
    start, end = form.window(now)
    if end is not None:
        rows = rows.filter(opened_at__lte=end)
    if start is not None:  # open at some time in the range: not resolved before it began
        rows = rows.filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=start))
    if status == "open":
        return rows.annotate(severity_order=porthealth.SEVERITY_ORDER).order_by("severity_order", "opened_at", "id")
    return rows.order_by("-opened_at", "-id")


def _silenced(rows, now) -> list:
    candidates = list(rows[:SILENCED_SCAN])
    porthealth.mark_silenced(candidates, now)
    return [e for e in candidates if e.silence is not None]


def _csv_rows(rows, now):
    """Rows marked a chunk at a time: an export of many events is neither held nor queried per event."""
    chunk: list = []
    for event in rows[:EXPORT_MAX] if isinstance(rows, list) else rows[:EXPORT_MAX].iterator(EXPORT_CHUNK):
        chunk.append(event)
        if len(chunk) == EXPORT_CHUNK:
            yield from _csv_chunk(chunk, now)
            chunk = []
    yield from _csv_chunk(chunk, now)


def _csv_chunk(events: list, now):
    mark_page(events, now)
    for e in events:
        ack, silence = e.ack, e.silence
        yield [
            e.severity, e.kind, e.node.name, e.device.name if e.device else None, e.port.number if e.port else None,
            e.message, e.reason, _utc(e.opened_at), _utc(e.updated_at), _utc(e.resolved_at),
            ack.by_name if ack else None, _utc(ack.at) if ack else None, ack.note if ack else None,
            _utc(silence.ends_at) if silence else None,
        ]  # fmt: skip


def _utc(when) -> str | None:
    return None if when is None else f"{when:%Y-%m-%d %H:%M:%S}"
