"""A sweep's forwarding tables, stored: one row per switch holding its whole table as bytes.

When a sweep carries tables (the collector read them: after a topology change, or on its interval),
they are the fabric's routes from then on: each switch's row is replaced, and the rows of switches
the sweep did not read are dropped, so no path is walked through a table that is no longer true.
"""

from __future__ import annotations

from datetime import datetime

from .models import FabricNode, SwitchRoutes
from .schema import FabricIn


def store_routes(fabric: FabricIn, known: dict[str, FabricNode]) -> int:
    """Replace the stored tables with the sweep's; how many switches' tables were stored."""
    if fabric.routes is None:
        return 0
    at: datetime = fabric.collected_at
    rows = [
        SwitchRoutes(switch=known[fabric.nodes[index].guid], lid=lid, lft=table, read_at=at)
        for index, (lid, table) in fabric.routes.items()
    ]
    SwitchRoutes.objects.all().delete()
    SwitchRoutes.objects.bulk_create(rows, batch_size=500)
    return len(rows)
