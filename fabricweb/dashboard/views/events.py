"""`/events/`: open and resolved events with filters, acknowledgements, silences and the operator's forms."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone

from fabricweb.health.models import Event, Silence

from .. import fabric
from ..forms import AcknowledgeForm, EventFilter, SilenceForm, glob_filter
from .common import can_operate, freshness, mark_page

PER_PAGE = 50
# "silenced" is decided in Python (globs); it looks at this many open events at most.
SILENCED_SCAN = 5000


@login_required
def event_list(request):
    now = timezone.now()
    form = EventFilter(request.GET)
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
    rows = Event.objects.select_related("node", "device", "port", "acknowledgement")
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
    if status == "open":
        rows = rows.annotate(severity_order=fabric.SEVERITY_ORDER).order_by("severity_order", "opened_at", "id")
    else:
        rows = rows.order_by("-opened_at", "-id")
    if status == "silenced":
        candidates = list(rows[:SILENCED_SCAN])
        fabric.mark_silenced(candidates, now)
        rows = [e for e in candidates if e.silence is not None]
    page = Paginator(rows, PER_PAGE).get_page(given.get("page"))
    mark_page(page, now)
    context.update(events=page, status=status)
    return render(request, "dashboard/events.html", context)
