"""GET /api/v1/ports (filtered) and /api/v1/ports/<node>/<device>/<port>."""

from __future__ import annotations

from django.db.models import QuerySet

from fabricweb.health.models import Event
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import NAME_MAX, TEXT_MAX, Port
from fabricweb.telemetry.history import samples

from .. import params, serializers
from ..http import api_view, not_found
from ..pagination import offset_page, offset_parsers

PAGE, MAX_PAGE = 1000, 5000

LIST_PARAMS = {
    "node": params.text(NAME_MAX),
    "state": params.choice(*portfacts.STATUSES),
    "degraded": params.boolean,
    "hca_type": params.text(TEXT_MAX),
    **offset_parsers(MAX_PAGE),
}


def ports() -> QuerySet[Port]:
    return portfacts.annotate(Port.objects.select_related("device__node", "peer__device__node"))


def find_port(node: str, device: str, number: int) -> Port:
    port = ports().filter(device__node__name=node, device__name=device, number=number).first()
    if port is None:
        raise not_found(f"port {number} on {node} {device}")
    readings.attach([port])
    return port


@api_view
def port_list(request):
    given = params.read(request, LIST_PARAMS)
    rows = ports()
    if "node" in given:
        rows = rows.filter(device__node__name=given["node"])
    rows = portfacts.filtered(rows, given.get("state"), given.get("degraded"))
    if "hca_type" in given:
        rows = rows.filter(device__hca_type=given["hca_type"])
    rows = rows.order_by("device__node__name", "device__name", "number")
    page, next_link = offset_page(request, rows, given, PAGE)
    return {"ports": [serializers.port_summary(p) for p in readings.attach(page)], "next": next_link}


@api_view
def port_detail(request, node: str, device: str, port: int):
    params.read(request, {})
    row = find_port(node, device, port)
    events = list(Event.objects.filter(port=row, resolved_at__isnull=True).select_related("node", "device", "port"))
    last = samples.last_of_port(row)
    return serializers.port_detail(row, events, last)
