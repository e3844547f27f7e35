"""`/ports/<node>/<device>/<port>/`: the port, its charts (drawn from `series/`) and its events."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from fabricweb.health.models import Event
from fabricweb.health.rules.findings import port_label
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Node, Port
from fabricweb.isotime import iso
from fabricweb.jobs.impact import jobs_by_port

from .. import porthealth, series, timerange
from .common import can_operate, freshness, mark_page


def find_port(node: str, device: str, number: int) -> Port:
    port = (
        portfacts.annotate(Port.objects.select_related("device__node", "peer__device__node"))
        .filter(device__node__name=node, device__name=device, number=number)
        .first()
    )
    if port is None:
        raise Http404(f"no port {node} {device}/{number}")
    readings.attach([port])
    return port


@login_required
def port_page(request, node: str, device: str, port: int):
    row = find_port(node, device, port)
    now = timezone.now()
    try:
        window, bad_range = timerange.choose(request.GET, now), ""
    except timerange.BadRange as error:
        window, bad_range = timerange.choose({}, now), str(error)
    events = list(
        Event.objects.filter(port=row)
        .select_related("node", "device", "port__peer__device__node", "acknowledgement")
        .order_by("-opened_at", "-id")[:20]
    )
    mark_page(events, now)
    peer = row.peer
    context = {
        "port": row,
        "device": row.device,
        "node": row.device.node,
        "health": porthealth.port_health(row.status, porthealth.problem_kinds(node=row.device.node_id).get(row.pk, ())),
        "state": IBSTAT_STATES.get(row.state_id, row.state_name),
        "phys_state": PHYS_STATES.get(row.phys_state_id, row.phys_state_name),
        "link": portfacts.link(row),  # None without one: a DOWN/Polling port's rate is no link
        "expected": portfacts.expected_link(row),
        "pcie": portfacts.pcie_link(row.device),
        "is_switch": row.device.node.kind == Node.Kind.SWITCH,
        "label": port_label(row.device.node.name, row.device.name, row.number),
        "peer": peer,
        "peer_is_switch": peer is not None and peer.device.node.kind == Node.Kind.SWITCH,
        "capable": portfacts.named_link(row.capable_speed, row.capable_lanes, None, row.link_layer),
        "counters": sorted((row.counters or {}).items()),
        "events": events,
        "jobs": jobs_by_port([row.pk]).get(row.pk, []),
        "ranges": list(timerange.RANGES),
        "range": window.range.name or "",
        "window": window,
        "series_query": _series_query(window),
        "bad_range": bad_range,
        "can_operate": can_operate(request.user),
        **freshness(now),
    }
    return render(request, "dashboard/port.html", context, status=400 if bad_range else 200)


def _series_query(window: timerange.Window) -> str:
    """What the charts ask `series` for: the named range, or the custom one's from/to (which then shows in the URL)."""
    if window.range.name:
        return urlencode({"range": window.range.name})
    return urlencode({"from": iso(window.since), "to": iso(window.until)})


@login_required
def port_series(request, node: str, device: str, port: int):
    row = find_port(node, device, port)
    now = timezone.now()
    try:
        window = timerange.choose(request.GET, now)
    except timerange.BadRange as error:
        return JsonResponse({"error": str(error)}, status=400)
    response = JsonResponse(series.port_series(row, window, now))
    response["Cache-Control"] = "no-store"
    return response
