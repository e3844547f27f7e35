"""What the pages read, each in a fixed number of queries whatever the size of the fabric.

Up, down and degraded come from fabricweb/api/linkstate.py (the API's definition);
"erroring" is a port that is up and at its expected link but has an open event of another
kind (symbol errors, flapping, congestion...).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, Count, IntegerField, Max, Q, Value, When

from fabricweb.api import linkstate
from fabricweb.api.freshness import stale_after
from fabricweb.health.models import Event, Silence, silencing
from fabricweb.inventory.models import Node, Port

from .forms import glob_filter

# Link kinds show as the port's colour already; the others make an up port "erroring".
LINK_KINDS = ("down", "degraded", "vanished")
SEVERITY_ORDER = Case(
    When(severity="critical", then=Value(0)),
    When(severity="warning", then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


@dataclass
class Counts:
    nodes: int
    stale_nodes: int
    ports: int
    up: int
    down: int
    degraded: int
    erroring: int
    open_events: dict[str, int]
    last_ingest: datetime | None


def counts(now: datetime) -> Counts:
    cutoff = now - stale_after()
    nodes = Node.objects.aggregate(
        total=Count("id"),
        stale=Count("id", filter=Q(last_ingested_at__isnull=True) | Q(last_ingested_at__lt=cutoff)),
        latest=Max("last_ingested_at"),
    )
    ports = linkstate.annotate(Port.objects.all()).aggregate(
        total=Count("id"), up=Count("id", filter=Q(api_up=True)), degraded=Count("id", filter=Q(api_degraded=True))
    )
    by_severity = dict(
        Event.objects.filter(resolved_at__isnull=True)
        .values_list("severity")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("severity", "n")
    )
    erroring = (
        linkstate.annotate(Port.objects.filter(pk__in=_erroring_candidates()))
        .filter(api_up=True, api_degraded=False)
        .count()
    )
    return Counts(
        nodes=nodes["total"],
        stale_nodes=nodes["stale"],
        ports=ports["total"],
        up=ports["up"],
        down=ports["total"] - ports["up"],
        degraded=ports["degraded"],
        erroring=erroring,
        open_events={s: by_severity.get(s, 0) for s in Event.Severity.values},
        last_ingest=nodes["latest"],
    )


def _erroring_candidates():
    return (
        Event.objects.filter(resolved_at__isnull=True, port__isnull=False)
        .exclude(kind__in=LINK_KINDS)
        .values("port_id")
    )


@dataclass(frozen=True, slots=True)
class Cell:
    node: str
    device: str
    port: int
    health: str  # up, down, degraded, erroring
    stale: bool


def port_health(up: bool, degraded: bool, erroring: bool) -> str:
    if not up:
        return "down"
    if degraded:
        return "degraded"
    return "erroring" if erroring else "up"


def grid(filters: dict, now: datetime) -> list[Cell]:
    """Every port matching `filters` (PortFilter's cleaned data), ordered by node, device, port."""
    rows = linkstate.annotate(Port.objects.all())
    if filters.get("node"):
        rows = rows.filter(**glob_filter("device__node__name", filters["node"]))
    if filters.get("device"):
        rows = rows.filter(**glob_filter("device__name", filters["device"]))
    for key, field in (("speed", "speed"), ("width", "lanes"), ("hca", "device__hca_type"), ("layer", "link_layer")):
        if filters.get(key) not in (None, ""):
            rows = rows.filter(**{field: filters[key]})
    erroring_ids = set(_erroring_candidates().values_list("port_id", flat=True))
    cutoff = now - stale_after()
    values = rows.order_by("device__node__name", "device__name", "number").values_list(
        "pk", "device__node__name", "device__name", "number", "api_up", "api_degraded", "device__node__last_ingested_at"
    )
    wanted_state, only_problems = filters.get("state"), filters.get("problems")
    cells = []
    for pk, node, device, number, up, degraded, ingested in values:
        health = port_health(up, degraded, pk in erroring_ids)
        if (wanted_state and health != wanted_state) or (only_problems and health == "up"):
            continue
        cells.append(Cell(node, device, number, health, ingested is None or ingested < cutoff))
    return cells


def open_problems(filters: dict):
    """Open events, most severe first, then oldest first (the longest-standing problem leads)."""
    rows = Event.objects.filter(resolved_at__isnull=True).select_related("node", "device", "port", "acknowledgement")
    if filters.get("node"):
        rows = rows.filter(**glob_filter("node__name", filters["node"]))
    if filters.get("device"):
        rows = rows.filter(**glob_filter("device__name", filters["device"]))
    return rows.annotate(severity_order=SEVERITY_ORDER).order_by("severity_order", "opened_at", "id")


def mark_silenced(events, now: datetime) -> None:
    """Set `event.silence` (the Silence in force that covers it, or None) on each of `events`."""
    silences = list(Silence.objects.active(now))
    for event in events:
        event.silence = silencing(event, silences) if event.is_open else None


def acknowledgement(event: Event):
    try:
        return event.acknowledgement
    except Event.acknowledgement.RelatedObjectDoesNotExist:
        return None
