"""GET /api/v1/events (newest first, cursor pages) and /api/v1/events/<id>."""

from __future__ import annotations

from django.db.models import Q

from fabricweb.health.models import Event
from fabricweb.inventory.models import NAME_MAX
from fabricweb.jobs.impact import jobs_for_events

from .. import params, serializers
from ..http import api_view, not_found
from ..pagination import cursor, keyset_page

PAGE, MAX_PAGE = 100, 1000

PARAMS = {
    "open": params.boolean,
    "severity": params.choice(*serializers.SEVERITIES),
    "node": params.text(NAME_MAX),
    "kind": params.text(Event._meta.get_field("kind").max_length),
    "since": params.timestamp,
    "limit": params.integer(1, MAX_PAGE),
    "cursor": cursor,
}


def events():
    return Event.objects.select_related("node", "device", "port")


@api_view
def event_list(request):
    given = params.read(request, PARAMS)
    rows = events()
    if "open" in given:
        rows = rows.filter(resolved_at__isnull=given["open"])
    for name, field in (("severity", "severity"), ("node", "node__name"), ("kind", "kind")):
        if name in given:
            rows = rows.filter(**{field: given[name]})
    if "since" in given:
        # Events that were open at any moment since then: still open, or resolved after it.
        rows = rows.filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=given["since"]))
    page, next_link = keyset_page(
        request, rows, "opened_at", newest_first=True, after=given.get("cursor"), limit=given.get("limit", PAGE)
    )
    jobs = jobs_for_events(page)
    return {"events": [serializers.event(e, jobs.get(e.pk)) for e in page], "next": next_link}


@api_view
def event_detail(request, pk: int):
    params.read(request, {})
    event = events().filter(pk=pk).first()
    if event is None:
        raise not_found(f"event {pk}")
    return serializers.event(event, jobs_for_events([event]).get(event.pk))
