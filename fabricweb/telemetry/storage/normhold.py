"""Holding a node out of the fabric norm when the hardware it reports jumps.

The fabric norm (expectation.py, context.load_majorities) gives each node one vote per HCA model and link.
That alone stops one node from outvoting the fabric with hundreds of ports; this stops a node from voting
with hardware it did not have before, until an operator says it is real: a host that reports HCA models it
never had, or ten times the ports it had (2 ports, then 512), is held out (Node.norm_hold_reason,
norm_hold_since) until accepted (actions.accept_norm). Its own ports are still judged, against the others.

Ingest calls `hold_if_jumped` with the node's rows as they were before the snapshot is applied
(telemetry/storage/apply.py), in memory, with no query; the node row is written with the batch. A node
seen for the first time, or that never reported a device, has nothing to jump from. A switch's ports
come from a fabric collector's sweep, not from the switch: never held. A held node stays held, with its
first reason, until accepted; fewer ports than before are not a jump (they add no vote).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from datetime import datetime
from typing import TYPE_CHECKING

from fabricweb.inventory.models import Device, Node

if TYPE_CHECKING:
    from fabricweb.telemetry.validation.typed import DeviceIn

GROWTH = 10  # ports reported over ports known: an order of magnitude


def hold_if_jumped(
    node: Node, devices: Mapping[str, Device], ports: Mapping[str, Sized], reported: Sequence[DeviceIn], now: datetime
) -> None:
    """Hold `node` out of the norm when `reported` (this snapshot's devices) jumps from `devices` and
    `ports` (every device and port row it has, vanished ones too: device name -> its ports)."""
    if node.norm_hold_since is not None or node.kind == Node.Kind.SWITCH or not devices:
        return
    if _same(devices, ports, reported):
        return
    reason = jump(
        [d.hca_type for d in devices.values()],
        sum(map(len, ports.values())),
        [_model(d, devices) for d in reported],
        sum(len(d.ports) for d in reported),
    )
    if reason:
        node.norm_hold_reason, node.norm_hold_since = reason, now


def _same(devices: Mapping[str, Device], ports: Mapping[str, Sized], reported: Sequence[DeviceIn]) -> bool:
    """Every device it reports is one it had, of the same model, with no more ports: nothing can have jumped
    (every poll of a node that did not change ends here, before any list is built)."""
    for d in reported:
        known = devices.get(d.name)
        if known is None or known.hca_type != _model(d, devices) or len(d.ports) > len(ports.get(d.name, ())):
            return False
    return True


def _model(d: DeviceIn, devices: Mapping[str, Device]) -> str | None:
    """The HCA model a reported device has: its own, or (its attributes as last sent, the wire form's `same`)
    the model stored for it."""
    if d.same:
        known = devices.get(d.name)
        return known.hca_type if known is not None else None
    return d.attrs.get("hca_type")


def jump(had_models: list[str | None], had_ports: int, models: list[str | None], ports: int) -> str:
    """Why hardware of HCAs of `models` with `ports` ports, after HCAs of `had_models` with `had_ports`, is a
    jump, in an operator's words; "" when it is not."""
    had, now = _known(had_models), _known(models)
    reasons = []
    new = sorted(set(now) - set(had))
    if had and new:
        reasons.append(f"reported HCA models it never had: {', '.join(new)} (had {', '.join(had)})")
    if ports >= GROWTH * max(had_ports, 1):
        reasons.append(f"reported {_hardware(ports, models)}, had {_hardware(had_ports, had_models)}")
    return "; ".join(reasons)


def _known(models: list[str | None]) -> list[str]:
    return sorted({m for m in models if isinstance(m, str) and m})


def _hardware(ports: int, models: list[str | None]) -> str:
    known = _known(models)
    hcas = f"{len(models)} HCA{'' if len(models) == 1 else 's'}"
    return f"{ports} port{'' if ports == 1 else 's'} on {hcas}" + (f" ({', '.join(known)})" if known else "")
