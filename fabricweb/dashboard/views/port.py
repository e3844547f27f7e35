"""`/ports/<node>/<device>/<port>/`: the port, its charts (drawn from `series/`) and its events."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from fabricweb.health.findings import port_label
from fabricweb.health.models import Event
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Node, Port

from .. import fabric, series
from .common import can_operate, freshness, mark_page

DEFAULT_RANGE = "1h"


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
    chosen = request.GET.get("range", DEFAULT_RANGE)
    status = 200
    if chosen not in series.RANGES:
        chosen, status = DEFAULT_RANGE, 400
    events = list(
        Event.objects.filter(port=row)
        .select_related("node", "device", "port", "acknowledgement")
        .order_by("-opened_at", "-id")[:20]
    )
    mark_page(events, now)
    peer = row.peer
    context = {
        "port": row,
        "device": row.device,
        "node": row.device.node,
        "health": fabric.port_health(row.status, fabric.problem_kinds(node=row.device.node_id).get(row.pk, ())),
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
        "ranges": list(series.RANGES),
        "range": chosen,
        "bad_range": status == 400,
        "can_operate": can_operate(request.user),
        **freshness(now),
    }
    return render(request, "dashboard/port.html", context, status=status)


@login_required
def port_series(request, node: str, device: str, port: int):
    row = find_port(node, device, port)
    wanted = series.RANGES.get(request.GET.get("range", DEFAULT_RANGE))
    if wanted is None:
        return JsonResponse({"error": f"range: expected one of {', '.join(series.RANGES)}"}, status=400)
    response = JsonResponse(series.port_series(row, wanted, timezone.now()))
    response["Cache-Control"] = "no-store"
    return response
