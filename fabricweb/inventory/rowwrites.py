"""Writes of port and device rows outside ingest, through one door that tells every ingest process.

An ingest process keeps each node's rows in memory between batches (telemetry/storage/rowcache.py) and
reuses them while the node's `ingest_token` is the one it wrote. A write it does not see (an operator's
action, a retirement) must clear that token, or the process judges the node with the rows it holds and
writes them back at the next poll: undoing a baseline was undone that way. ORM saves and deletes clear
it through signals (rowcache.on_row_changed); a queryset's update() sends none, so it goes through here.

Only ingest's own writes bypass this (they change the rows in the memory of the process that holds
them): telemetry/storage, the health engine's expected links and the fabric's link facts.
`tests/test_row_writes.py` fails on a Port or Device update() or raw write anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from .models import Node, Port


def invalidate(node_ids: Iterable[int | None]) -> None:
    """Tell every ingest process that these nodes' rows changed outside ingest: each reads them afresh."""
    ids = [i for i in node_ids if i is not None]
    if ids:
        Node.objects.filter(pk__in=ids).update(ingest_token=None)


def update_ports(ports: QuerySet[Port], **fields: object) -> int:
    """`ports.update(**fields)`, their nodes told (invalidate); how many rows were updated."""
    nodes = set(ports.values_list("device__node_id", flat=True))
    updated = ports.update(**fields)
    invalidate(nodes)
    return updated
