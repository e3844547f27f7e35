"""GET /api/v1/switches, /api/v1/switches/<name or GUID>, /api/v1/links and /api/v1/topology-changes:
the fabric as the fabric collector's sweeps see it (fabricweb.fabric)."""

from __future__ import annotations

from django.db.models import Q

from fabricweb.fabric.models import FabricNode, Link, TopologyChange
from fabricweb.fabric.naming import find_switch
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import NAME_MAX, Node, Port
from fabricweb.jobs.impact import jobs_by_link

from .. import params, serializers
from ..http import api_view, not_found
from ..pagination import cursor, keyset_page, offset_page, offset_parsers
from .nodes import open_event_counts, port_counts

SWITCH_PAGE, SWITCH_MAX_PAGE = 500, 5000
LINK_PAGE, LINK_MAX_PAGE = 1000, 5000
CHANGE_PAGE, CHANGE_MAX_PAGE = 100, 1000

LINK_PARAMS = {
    "inter_switch": params.boolean,
    "degraded": params.boolean,
    "state": params.choice(*portfacts.LINK_STATES),
    "node": params.text(NAME_MAX),
    **offset_parsers(LINK_MAX_PAGE),
}
CHANGE_PARAMS = {"since": params.timestamp, "limit": params.integer(1, CHANGE_MAX_PAGE), "cursor": cursor}


def _fabric_node(node: Node) -> FabricNode | None:
    try:
        return node.fabric_node
    except Node.fabric_node.RelatedObjectDoesNotExist:
        return None


@api_view
def switch_list(request):
    given = params.read(request, offset_parsers(SWITCH_MAX_PAGE))
    rows = Node.objects.filter(kind=Node.Kind.SWITCH).select_related("fabric_node").order_by("name")
    switches, next_link = offset_page(request, rows, given, SWITCH_PAGE)
    ids = [s.pk for s in switches]
    ports, events = port_counts(ids), open_event_counts(ids)
    out = [serializers.switch_summary(s, _fabric_node(s), ports.get(s.pk, {}), events.get(s.pk, {})) for s in switches]
    return {"switches": out, "next": next_link}


@api_view
def switch_detail(request, key: str):
    params.read(request, {})
    switch = find_switch(key)
    if switch is None:
        raise not_found(f"switch {key!r}")
    ports = readings.attach(
        portfacts.annotate(
            Port.objects.filter(device__node=switch).select_related("device__node", "peer__device__node"),
        ).order_by("device__name", "number")
    )
    counts = portfacts.tally(p.status for p in ports)
    events = open_event_counts([switch.pk]).get(switch.pk, {})
    summary = serializers.switch_summary(switch, _fabric_node(switch), counts, events)
    return {**summary, "port_list": [serializers.port_summary(p) for p in ports]}


@api_view
def link_list(request):
    given = params.read(request, LINK_PARAMS)
    rows = portfacts.link_states(Link.objects.select_related("a__device__node", "b__device__node"))
    if "inter_switch" in given:
        rows = rows.filter(inter_switch=given["inter_switch"])
    if "degraded" in given:
        rows = rows.filter(state="degraded") if given["degraded"] else rows.exclude(state="degraded")
    if "state" in given:
        rows = rows.filter(state=given["state"])
    if "node" in given:
        rows = rows.filter(Q(a__device__node__name=given["node"]) | Q(b__device__node__name=given["node"]))
    page, next_link = offset_page(request, rows.order_by("a_label", "a_port", "id"), given, LINK_PAGE)
    page = list(page)
    jobs = jobs_by_link([r.pk for r in page])
    return {"links": [serializers.fabric_link(r, jobs.get(r.pk)) for r in page], "next": next_link}


@api_view
def topology_change_list(request):
    given = params.read(request, CHANGE_PARAMS)
    rows = TopologyChange.objects.all()
    if "since" in given:
        rows = rows.filter(at__gte=given["since"])
    page, next_link = keyset_page(
        request, rows, "at", newest_first=True, after=given.get("cursor"), limit=given.get("limit", CHANGE_PAGE)
    )
    return {"topology_changes": [serializers.topology_change(c) for c in page], "next": next_link}
