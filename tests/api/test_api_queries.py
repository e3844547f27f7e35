"""Covers fabricweb/inventory/models.py, fabricweb/api/views/nodes.py, fabricweb/api/views/ports.py,
fabricweb/api/views/samples.py, fabricweb/api/views/events.py.

The number of queries per request stays the same however many nodes, ports and events there are."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.inventory.models import Port
from tests.api.api_support import T0, SimFabric, event

PATHS = (
    "/api/v1/nodes",
    "/api/v1/nodes/cn001",
    "/api/v1/ports",
    "/api/v1/ports?state=up&degraded=false",
    "/api/v1/ports/cn001/mlx5_0/1",
    "/api/v1/ports/cn001/mlx5_0/1/samples?since=2026-03-01T00:00:00Z",
    "/api/v1/events",
)


def queries(api, path: str) -> int:
    api.get(path)  # warm-up: a token's first use also records last_used_at
    with CaptureQueriesContext(connection) as ctx:
        assert api.get(path).status_code == 200
    return len(ctx.captured_queries)


def grow(fab: SimFabric, polls: int) -> None:
    for _ in range(polls):
        fab.poll()
    for node in fab.nodes:  # an event per node, so the event list grows with the fabric too
        first = Port.objects.filter(device__node__name=node).order_by("device__name", "number").first()
        event(first, "symbol_errors", "warning", T0)


def test_query_counts_do_not_grow_with_the_fabric(each_db, api, tmp_path):
    small = SimFabric(tmp_path / "small", 2)
    grow(small, 2)
    before = {path: queries(api, path) for path in PATHS}

    # The same node names and more of them (6x the ports), polled later so that its snapshots are the newest.
    large = SimFabric(tmp_path / "large", 12, start=T0 + timedelta(hours=1))
    grow(large, 3)
    after = {path: queries(api, path) for path in PATHS}

    assert after == before
    # 6: a node's page also reads the samples of the polls since its history's checkpoint (inventory.readings)
    assert max(before.values()) <= 6, before
