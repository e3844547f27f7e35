"""Everything /metrics reads from the database, in one place: the current-state tables as plain rows.

Only the columns a scrape needs, as tuples (values_list, no model instances). Where a port's
raw counters live (today the JSON columns Port.counters, counters_ext and hw_counters) is
known here and nowhere else in the exporter: the rows carry them as dicts, or None.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count

from fabricweb.api.linkstate import annotate
from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Node, Port

PORT_FIELDS = (
    "id", "device_id", "number", "state_id", "phys_state_id", "link_layer", "rate_gbps", "lanes", "speed",
    "expected_speed", "expected_lanes", "expected_source", "capped", "vanished_at", "api_up", "api_degraded",
)  # fmt: skip
# Appended to PORT_FIELDS when counters are asked for: row[16], row[17], row[18].
PORT_COUNTER_FIELDS = ("counters", "counters_ext", "hw_counters")
DEVICE_FIELDS = (
    "id", "node_id", "name", "fw_ver", "hca_type", "board_id",
    "pci_current_gts", "pci_current_width", "pci_max_gts", "pci_max_width", "vanished_at",
)  # fmt: skip
# Appended to DEVICE_FIELDS when counters are asked for: row[11].
DEVICE_COUNTER_FIELDS = ("hw_counters",)


def nodes() -> Iterable[tuple[int, str, datetime | None]]:
    """(id, name, last_ingested_at) of every node, by name."""
    return Node.objects.order_by("name").values_list("id", "name", "last_ingested_at")


def devices(node_ids: list[int] | None, counters: bool) -> Iterable[tuple]:
    """DEVICE_FIELDS (+ hw_counters) of the devices of `node_ids` (None: all), unordered."""
    rows = Device.objects.order_by().values_list(*DEVICE_FIELDS, *(DEVICE_COUNTER_FIELDS if counters else ()))
    return rows if node_ids is None else rows.filter(node_id__in=node_ids)


def ports(device_ids: list[int] | None, counters: bool) -> Iterable[tuple]:
    """PORT_FIELDS (+ the counter dicts) of the ports of `device_ids` (None: all), unordered."""
    rows = annotate(Port.objects.order_by()).values_list(*PORT_FIELDS, *(PORT_COUNTER_FIELDS if counters else ()))
    return rows if device_ids is None else rows.filter(device_id__in=device_ids)


def open_events() -> Iterable[tuple[int, int | None, int | None, str, str, int]]:
    """(node_id, device_id, port_id, kind, severity, how many) of the open health events."""
    return (
        Event.objects.filter(resolved_at__isnull=True)
        .order_by()
        .values_list("node_id", "device_id", "port_id", "kind", "severity")
        .annotate(n=Count("id"))
    )
