"""The expected topology in the database: imported whole, replacing the one before (fabricweb.fabric.expected
reads the file). Judged at every full sweep (fabricweb.fabric.judge.cabling)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .expected import parse
from .models import ExpectedLink


def import_topology(text: str, source: str) -> int:
    """Replace the expected topology with the links of `text`; TopologyError (nothing stored) if it is bad."""
    links = parse(text, source)
    now = timezone.now()
    rows = [
        ExpectedLink(
            a_node=a.node,
            a_device=a.device,
            a_port=a.port,
            a_label=a.label[:256],
            b_node=b.node,
            b_device=b.device,
            b_port=b.port,
            b_label=b.label[:256],
            source=f"{source} (link {i})"[:256],
            imported_at=now,
        )
        for i, (a, b) in enumerate(links, 1)
    ]
    with transaction.atomic():
        ExpectedLink.objects.all().delete()
        ExpectedLink.objects.bulk_create(rows, batch_size=2000)
    return len(rows)
