"""GET /api/v1/nodes and /api/v1/nodes/<name>."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from fabricweb.health.models import Event
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Node, Port

from .. import params, serializers
from ..http import api_view, not_found
from ..pagination import link, offset_page, offset_parsers

PAGE, MAX_PAGE = 1000, 5000
# Read errors in the node detail; the rest page through /read-errors (a broken node may report thousands).
ERRORS_SHOWN, ERRORS_PAGE, ERRORS_MAX_PAGE = 100, 500, 2000


def port_counts(node_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per node: its ports in total and by status (portfacts), in one grouped query."""
    return portfacts.status_counts(Port.objects.filter(device__node_id__in=node_ids), "device__node_id")


def open_event_counts(node_ids: list[int]) -> dict[int, dict[str, int]]:
    rows = (
        Event.objects.filter(node_id__in=node_ids, resolved_at__isnull=True)
        .values("node_id", "severity")
        .annotate(n=Count("id"))
        .order_by()
    )
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        out[row["node_id"]][row["severity"]] = row["n"]
    return out


LIST_PARAMS = {"kind": params.choice(*Node.Kind.values), **offset_parsers(MAX_PAGE)}


@api_view
def node_list(request):
    given = params.read(request, LIST_PARAMS)
    rows = Node.objects.order_by("name")
    if "kind" in given:
        rows = rows.filter(kind=given["kind"])
    nodes, next_link = offset_page(request, rows, given, PAGE)
    ids = [n.pk for n in nodes]
    ports, events = port_counts(ids), open_event_counts(ids)
    summaries = [
        serializers.node_summary(n, ports.get(n.pk, {}), events.get(n.pk, {}), portfacts.node_is_stale(n))
        for n in nodes
    ]
    return {"nodes": summaries, "next": next_link}


@api_view
def node_detail(request, name: str):
    params.read(request, {})
    node = Node.objects.filter(name=name).select_related("readings__hw").first()  # no query of its own
    if node is None:
        raise not_found(f"node {name!r}")
    ports = readings.attach(
        portfacts.annotate(
            Port.objects.filter(device__node=node).select_related("device__node", "peer__device__node")
        ).order_by("device__name", "number"),
        readings.of_node(node),
    )
    by_device = defaultdict(list)
    for port in ports:
        by_device[port.device_id].append(port)
    # The ports are loaded anyway: count them here rather than in another query.
    counts = portfacts.tally(p.status for p in ports)
    events = open_event_counts([node.pk]).get(node.pk, {})
    summary = serializers.node_summary(node, counts, events, portfacts.node_is_stale(node))
    return {
        **summary,
        "source": node.source,
        "read_errors": node.read_errors[:ERRORS_SHOWN],
        "read_errors_next": (
            f"/api/v1/nodes/{node.name}/read-errors?offset={ERRORS_SHOWN}"
            if len(node.read_errors) > ERRORS_SHOWN
            else None
        ),
        "devices": [serializers.device(d, by_device[d.pk]) for d in node.devices.order_by("name")],
        # Its GPUs with their link and nvidia-smi topo relation to each RDMA device; null: its agent sends no PCIe tree.
        "gpus": portfacts.gpus(node),
    }


@api_view
def node_read_errors(request, name: str):
    """The files the node's last snapshot could not read, a page at a time."""
    given = params.read(request, offset_parsers(ERRORS_MAX_PAGE))
    node = Node.objects.filter(name=name).only("name", "read_errors").first()
    if node is None:
        raise not_found(f"node {name!r}")
    limit, offset = given.get("limit", ERRORS_PAGE), given.get("offset", 0)
    page = node.read_errors[offset : offset + limit]
    more = offset + limit < len(node.read_errors)
    return {
        "node": node.name,
        "total": len(node.read_errors),
        "read_errors": page,
        "next": link(request, limit=limit, offset=offset + limit) if more else None,
    }
