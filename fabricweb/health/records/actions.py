"""Operator actions on expectations: accept a port's current link as its baseline (and undo that); accept a node
held out of the fabric norm (fabricweb/telemetry/storage/normhold.py) as normal.

A baseline is stored as a LinkPolicy row (expectation.baseline_policy): one exact
policy per port, order 0, named `baseline <node> <device>/<port>`. Chosen over a
field on Port because a policy is what the rules already read, shows in the admin
next to the site's other policies, travels with export_policies/import_policies,
and is undone by deleting one row. The port's best-ever link is also set to the
current one, so that deleting the policy later does not bring back the old best
and with it the old alarm. Who accepted it and when are kept on the policy, with the port's best and expected
link before it: undoing the baseline deletes the policy and puts those back.

The degraded event is not resolved here: the next polls judge the port against the
new expectation and resolve it after FABRIC_RESOLVE_AFTER clean polls, as any event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.inventory.rowwrites import update_ports

from ..models import LinkPolicy
from ..rules.expectation import baseline_name, baseline_policy
from ..rules.findings import port_label
from . import context


class NormHoldError(ValueError):
    """A node that is not held out of the fabric norm: there is nothing to accept."""


class BaselineError(ValueError):
    """A port whose current link cannot be a baseline (down, or its speed or width unknown)."""


@dataclass(slots=True)
class Baseline:
    policies: list[LinkPolicy] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "cn042 mlx5_1/1: port is DOWN"


# What a baseline replaces on the port, and undoing it puts back.
_REPLACED = ("best_speed", "best_lanes", "expected_speed", "expected_lanes", "expected_source")


def accept_baseline(target: Port | Device | Node, by: str = "") -> Baseline:
    """Accept the current link of a port, or of every port of a device or node, as what it should run at;
    `by`: who (kept on the policy, with when).

    A port named on its own must be up with a known link (BaselineError otherwise);
    for a device or node such ports are skipped and listed in `skipped`.
    """
    if isinstance(target, Port):
        node_id, ports = target.device.node_id, Port.objects.filter(pk=target.pk)
    elif isinstance(target, Device):
        node_id, ports = target.node_id, Port.objects.filter(device=target)
    elif isinstance(target, Node):
        node_id, ports = target.pk, Port.objects.filter(device__node=target)
    else:
        raise TypeError(f"accept_baseline takes a Port, Device or Node, not {type(target).__name__}")
    done = Baseline()
    with transaction.atomic():
        # Ingest of this node waits (and vice versa), so it cannot write back the old best link.
        Node.objects.select_for_update().filter(pk=node_id).first()
        for port in ports.select_related("device__node").order_by("device__name", "number"):
            label = port_label(port.device.node.name, port.device.name, port.number)
            link = context.rate(port.speed, port.lanes)
            why = _not_baseline(port, link)
            if why:
                if isinstance(target, Port):
                    raise BaselineError(f"{label}: cannot accept the current link as baseline: {why}")
                done.skipped.append(f"{label}: {why}")
                continue
            spec = baseline_policy(port.device.node.name, port.device.name, port.number, link)
            before = LinkPolicy.objects.filter(name=spec.name).values_list("replaced", flat=True).first()
            policy, _ = LinkPolicy.objects.update_or_create(
                name=spec.name,
                defaults={
                    "node_glob": spec.node,
                    "device_glob": spec.device,
                    "port_glob": spec.port,
                    "speed": spec.speed,
                    "lanes": spec.lanes,
                    "expect_up": spec.expect_up,
                    "order": spec.order,
                    "enabled": True,
                    "accepted_by": by,
                    "accepted_at": timezone.now(),
                    # Accepted again: undo still goes back to before the first one.
                    "replaced": before or {f: getattr(port, f) for f in _REPLACED},
                },
            )
            port.best_speed, port.best_lanes = link.speed, link.lanes
            port.expected_speed, port.expected_lanes = link.speed, link.lanes
            port.expected_source = f"policy {policy.name!r}"
            port.save(update_fields=["best_speed", "best_lanes", "expected_speed", "expected_lanes", "expected_source"])
            done.policies.append(policy)
    context.forget()  # this process; ingest workers read policies again within one poll interval
    return done


def baseline_of(port: Port) -> LinkPolicy | None:
    """The port's baseline policy (accept_baseline's), if it has one."""
    name = baseline_name(port.device.node.name, port.device.name, port.number)
    return LinkPolicy.objects.filter(name=name).first()


def undo_baseline(port: Port) -> LinkPolicy:
    """Delete the port's baseline policy and put back the best and expected link it replaced; the next polls
    judge the port against that again. BaselineError when the port has no baseline."""
    with transaction.atomic():
        Node.objects.select_for_update().filter(pk=port.device.node_id).first()  # as accept_baseline
        policy = baseline_of(port)
        if policy is None:
            label = port_label(port.device.node.name, port.device.name, port.number)
            raise BaselineError(f"{label}: no baseline to undo")
        restored = {f: policy.replaced[f] for f in _REPLACED if f in policy.replaced}
        if restored:
            # Through the door that tells ingest: the rows an ingest process holds (the baseline's link) would
            # be judged and written back at the next poll, the undo undone.
            update_ports(Port.objects.filter(pk=port.pk), **restored)
        policy.delete()
    context.forget()
    return policy


def _not_baseline(port: Port, link) -> str:
    if not portfacts.is_up(port):
        return f"the port is {port.state_name or 'not ACTIVE'}, not up"
    if link is None:
        return "its speed or width is unknown"
    return ""


def accept_norm(node: Node, by: str) -> Node:
    """Accept the hardware `node` reports as normal: it votes in the fabric norm again, one vote per HCA model
    and link, and who accepted it and when are kept on the node. NormHoldError when it is not held out."""
    with transaction.atomic():
        # Ingest of this node waits (and vice versa): it cannot write back the hold from rows read before.
        row = Node.objects.select_for_update().filter(pk=node.pk).first()
        if row is None or row.norm_hold_since is None:
            raise NormHoldError(f"{node.name}: not held out of the fabric norm, nothing to accept")
        row.norm_hold_reason, row.norm_hold_since = "", None
        row.norm_accepted_by, row.norm_accepted_at = by, timezone.now()
        row.ingest_token = None  # every ingest process reads the node afresh (telemetry.storage.rowcache)
        row.save(
            update_fields=[
                "norm_hold_reason",
                "norm_hold_since",
                "norm_accepted_by",
                "norm_accepted_at",
                "ingest_token",
            ]
        )
    context.forget()  # this process; ingest workers read the norm again within one poll interval
    return row
