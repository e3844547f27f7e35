"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py.

Events another judge owns (a node's drain state, a port GUID conflict) are about a host and its ports, but a
host's own judgement of its snapshots never counts them clean: they stay open until their own judge resolves
them (fabricweb.health.rules.findings.JUDGED_ELSEWHERE). Without it a drain event was resolved after three polls and
opened again by the next drain pass, a notification each time."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from tests.api.api_support import SimFabric


def test_a_hosts_own_polls_leave_a_drain_and_a_guid_conflict_event_open(each_db, tmp_path):
    fab = SimFabric(tmp_path / "sim", 1, start=timezone.now() - timedelta(minutes=5))
    fab.poll()
    node = Node.objects.get(name="cn001")
    port = Port.objects.filter(device__node=node).order_by("device__name", "number").first()
    now = timezone.now()
    for kind, key, on_port in (
        ("drain", "drain:cn001", None),
        ("guid_conflict", f"guid_conflict:cn001/{port.device.name}/{port.number}", port),
    ):
        Event.objects.create(
            node=node, device=on_port and on_port.device, port=on_port, kind=kind, severity="info", key=key,
            message=f"cn001: {kind}", opened_at=now, updated_at=now,
        )  # fmt: skip
    for _ in range(5):
        fab.poll()
    still = set(
        Event.objects.filter(resolved_at__isnull=True, kind__in=("drain", "guid_conflict")).values_list(
            "key", flat=True
        )
    )
    assert still == {"drain:cn001", f"guid_conflict:cn001/{port.device.name}/{port.number}"}
