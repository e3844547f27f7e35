"""A node's per-poll port readings as stored in its NodeReadings row, and reading them back onto ports.

The layout, in one place. Two columns, each a JSON array with one entry per port:
- `counters`: `[port_id, last_collected_at (µs since the epoch, UTC) or null, counters,
  counters_ext, hw_counters]`: what /metrics reads;
- `history`: `[port_id, state_polls, recent]`: what ingest and health read, up to ~110
  ring entries per port after an hour, which a scrape need not decode.
JSON text in a bytea, not jsonb: nobody queries inside it, so the database neither parses nor
rebuilds it. Encoded with orjson; a column holding a counter past 64 bits (allowed up to
4 x 2^64, schema.py), which orjson cannot write and would read back as a float, is written by
the standard library with a leading space, which tells to read it with it too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import orjson
from django.db.models import QuerySet

from .models import Node, NodeReadings, Port

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
BIG = b" "  # leads a column written by json (integers past 64 bits)
# What decode gives per port, in order; a port without history reads as never judged.
FIELDS = ("last_collected_at", "state_polls", "counters", "counters_ext", "hw_counters", "recent")
COUNTERS = slice(2, 5)  # counters, counters_ext, hw_counters of a decoded entry

_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def encode(ports: Iterable[Port]) -> dict[str, bytes]:
    """The NodeReadings columns for these ports (all of a node's): {"counters": ..., "history": ...}."""
    ports = list(ports)
    counters = [
        [
            p.pk,
            None if p.last_collected_at is None else (p.last_collected_at - EPOCH) // US,
            p.counters,
            p.counters_ext,
            p.hw_counters,
        ]
        for p in ports
    ]
    return {"counters": _dump(counters), "history": _dump([[p.pk, p.state_polls, p.recent] for p in ports])}


def _dump(entries: list) -> bytes:
    try:
        return orjson.dumps(entries)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits
        return BIG + _dumps(entries).encode()


def _load(data: bytes | memoryview) -> list:
    raw = bytes(data)  # PostgreSQL's driver gives a memoryview
    return json.loads(raw) if raw.startswith(BIG) else orjson.loads(raw)


def decode(counters: bytes | memoryview | None, history: bytes | memoryview | None) -> dict[int, list]:
    """port id -> [last_collected_at (datetime or None), state_polls, counters, counters_ext, hw_counters, recent]."""
    if counters is None:
        return {}
    kept = {pk: (polls, recent) for pk, polls, recent in _load(history)} if history is not None else {}
    out = {}
    for pk, us, *raw in _load(counters):
        polls, recent = kept.get(pk, (1, []))
        out[pk] = [None if us is None else EPOCH + us * US, polls, *raw, recent]
    return out


def of_nodes(node_ids: Iterable[int] | QuerySet | None, history: bool = True) -> dict[int, list]:
    """The readings of every port of these nodes (None: all nodes), by port id; without `history`, its
    state_polls and ring are not read (1 and [])."""
    rows = NodeReadings.objects.order_by()
    if node_ids is not None:  # ids, or a query of them (a subquery)
        rows = rows.filter(node_id__in=node_ids if isinstance(node_ids, QuerySet) else list(node_ids))
    out: dict[int, list] = {}
    if history:
        for counters, kept in rows.values_list("counters", "history").iterator(chunk_size=500):
            out.update(decode(counters, kept))
    else:
        for counters in rows.values_list("counters", flat=True).iterator(chunk_size=500):
            out.update(decode(counters, None))
    return out


def of_node(node: Node) -> dict[int, list]:
    """The readings of a node read with select_related("readings"), by port id."""
    try:
        row = node.readings
    except NodeReadings.DoesNotExist:  # never polled
        return {}
    return decode(row.counters, row.history)


def set_on(port: Port, values: list | None) -> None:
    """Give `port` its readings (None: never polled)."""
    if values is None:
        return
    for name, value in zip(FIELDS, values, strict=True):
        setattr(port, name, value)


def attach(ports: Iterable[Port], by_port: Mapping[int, list] | None = None) -> list[Port]:
    """Set the readings of `ports` (rows read with the ORM), from `by_port` or read for their nodes."""
    ports = list(ports)
    if by_port is None:
        node_ids = {p.device.node_id for p in ports} if all(_device_loaded(p) for p in ports) else None
        if node_ids is None:
            node_ids = set(Port.objects.filter(pk__in=[p.pk for p in ports]).values_list("device__node_id", flat=True))
        by_port = of_nodes(node_ids) if ports else {}
    for p in ports:
        set_on(p, by_port.get(p.pk))
    return ports


def _device_loaded(port: Port) -> bool:
    return Port.device.is_cached(port)
