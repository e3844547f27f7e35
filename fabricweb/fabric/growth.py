"""A sweep that adds more switches than a stated share is held for an operator, as a host whose
hardware jumps is held out of the fabric norm (fabricweb.telemetry.storage.normhold).

Each new switch is an inventory node with its ports, samples and judgement: from the leader, one sweep of
2,000 made-up switches stalled ingest for about 9 s and left them in the inventory for good. So before
anything of a sweep is stored, its switch GUIDs are compared with the switches known (one query): a sweep
adding more than max(FABRIC_SWEEP_MAX_NEW_SWITCHES, FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT % of the switches
known) is recorded, not applied, and its collector held (Node.norm_hold_reason and norm_hold_since: its page,
the API, /healthz) until an operator accepts it (health.records.actions.accept_norm: the dashboard's button on the
collector's page); the collector's next sweep is then applied whatever it adds. The first sweep of a fabric
with no switch known is never held: there is nothing to grow from.

A held collector's sweeps that add nothing over the share are applied (nothing in them to hold), and it stays
held, with its first reason, until accepted: one hostile sweep does not blind the fabric view, and is not
forgotten either. A standby collector takes over a held leader's fabric as it does a silent one's.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from fabricweb.inventory.models import Node

from .models import FabricNode, Sweep
from .nodes import NODE_TYPE_SWITCH
from .schema import FabricIn

HELD = "held:"  # how a held sweep's note begins


def over_budget(collector: Node, fabric: FabricIn) -> str:
    """Why `fabric` must be held for an operator, in an operator's words; "" when it may be applied."""
    guids = {n.guid for n in fabric.nodes if n.node_type == NODE_TYPE_SWITCH}
    if not guids:
        return ""
    known = set(FabricNode.objects.filter(node_type=NODE_TYPE_SWITCH).values_list("guid", flat=True))
    new = len(guids - known)
    allowed = max(
        settings.FABRIC_SWEEP_MAX_NEW_SWITCHES, len(known) * settings.FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT // 100
    )
    if not known or new <= allowed or _accepted(collector):
        return ""
    return (
        f"its sweep adds {new} switches to the {len(known)} known, more than the {allowed} one sweep may add "
        "(FABRIC_SWEEP_MAX_NEW_SWITCHES, FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT): held until an operator accepts it"
    )


def hold(collector: Node, reason: str, now: datetime) -> str:
    """Hold `collector` (kept with its first reason while held); the note of the sweep not applied."""
    if collector.norm_hold_since is None:
        collector.norm_hold_reason, collector.norm_hold_since = reason, now
        collector.save(update_fields=["norm_hold_reason", "norm_hold_since"])
    return f"{HELD} {reason}"[:256]


def _accepted(collector: Node) -> bool:
    """An operator accepted the collector's hold, and no sweep of it came since its last held one: the one
    accepted is applied (the next sweep after it is judged afresh)."""
    if collector.norm_hold_since is not None or collector.norm_accepted_at is None:
        return False
    last = Sweep.objects.filter(collector=collector).order_by("-stored_at", "-id").values_list("note", flat=True)
    note = last.first()
    return note is not None and note.startswith(HELD)
