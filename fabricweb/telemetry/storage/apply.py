"""Apply one validated snapshot to the loaded rows of its node, in memory, with no queries.

`Changes` collects what must be written (new rows, updated rows, samples); the
caller (fabricweb.telemetry.storage.store) writes it all at the end of the transaction.
Snapshots of one node must be applied in time order against the same NodeRows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import attrgetter

from collectors.facts import is_ethernet, is_up
from collectors.link import Rate, better_link, make_rate
from collectors.roce import WIRE_NAMES as LOSSLESS
from collectors.wire import AS_LAST_SENT
from fabricweb.inventory.models import Device, Node, Port

from ..results import DUPLICATE, REFUSED, STALE, STORED, IngestResult, LinkState, PortObservation
from ..validation.portfields import LINK_FIELDS
from ..validation.typed import DeviceIn, PortIn, SnapshotIn
from . import budget as node_budget
from . import normhold, ring
from .columns import COUNTER_NAMES, DELTA_COUNTERS
from .deltas import Reading, named_deltas, port_deltas

_US = timedelta(microseconds=1)
_LINK = attrgetter(*LINK_FIELDS)  # one C call per side instead of a getattr per field, at every port and poll


@dataclass(slots=True)
class NodeRows:
    """A node's stored rows, kept current as its snapshots are applied.

    Each device has its `node` attached and each port its `device` (store.load_nodes),
    so nothing here or in the health hook queries for them.
    """

    node: Node
    devices: dict[str, Device] = field(default_factory=dict)
    ports: dict[str, dict[int, Port]] = field(default_factory=dict)  # device name -> number -> port
    new: bool = False
    # The ports' history (state_polls, rings) is written as a checkpoint (inventory.readings): the
    # latest poll the stored one includes and the latest applied (epoch seconds; None: not known),
    # and whether a poll since needs more than its sample to be replayed (telemetry.storage.catchup).
    checkpoint_at: float | None = None
    seen_until: float | None = None
    checkpoint_due: bool = True
    # Its ports' hw_counters must be written (their NodeHwReadings row is written only when they may have
    # changed): a poll that carried other ones, a new port, and this process's first write of the node.
    hw_due: bool = True


@dataclass(slots=True)
class Changes:
    new_devices: list[Device] = field(default_factory=list)
    new_ports: list[Port] = field(default_factory=list)
    # (node id, collected_at) -> that node-poll's samples, each (port, head, deltas): the head as packing.HEAD
    # says, the deltas in DELTA_COLUMNS order. By node-poll as they are stored (store.insert_samples).
    samples: dict[tuple[int, datetime], list[tuple[Port, tuple, list]]] = field(default_factory=dict)
    # Existing rows to update, by id: nodes and devices whole; ports only by what changed.
    nodes: dict[int, Node] = field(default_factory=dict)
    gpus: dict[int, Node] = field(default_factory=dict)  # ... and their GPUs changed (rarely: not with the rest)
    devices: dict[int, Device] = field(default_factory=dict)
    rare: dict[int, Port] = field(default_factory=dict)  # seen this poll, and their caps, reset or absence changed
    links: dict[int, Port] = field(default_factory=dict)  # ... and their link (state, rate, lid...) changed
    gone: dict[int, Port] = field(default_factory=dict)  # absent from the snapshot
    # Nodes with a snapshot stored, by id: their ports' per-poll readings (raw counters, ring,
    # state_polls, last_collected_at) are written as one NodeReadings row each.
    readings: dict[int, NodeRows] = field(default_factory=dict)


def classify(snap: SnapshotIn, rows: NodeRows) -> tuple[str, bool]:
    """(status, clock_backwards) of a snapshot against the node's last applied one.

    Later than the last: stored. The same time: a duplicate. Earlier: either a late or
    redelivered message, which must not move state back (stale), or the node's clock
    stepped back. Applied as a clock step when some counter moved on and none went down
    since the last snapshot, or when the server's receive time says so: the last one was
    dated ahead of its own arrival here (the node's clock ran fast) and this one after that
    arrival, which no message sent before the last one can be. So an idle node whose fast
    clock was set right is not frozen until the real time catches up with its old dates.
    """
    last = rows.node.last_collected_at
    if last is None or snap.collected_at > last:
        return STORED, False
    if snap.collected_at == last:
        return DUPLICATE, False
    arrived = rows.node.last_ingested_at
    if arrived is not None and last > arrived and snap.collected_at > arrived:
        return STORED, True
    return (STORED, True) if _counters_moved_on(snap, rows) else (STALE, False)


def _counters_moved_on(snap: SnapshotIn, rows: NodeRows) -> bool:
    forward = False
    for d in snap.devices:
        known = rows.ports.get(d.name, {})
        for p in d.ports:
            port = known.get(p.number)
            if port is None:
                continue
            for new, old in ((p.counters, port.counters), (p.counters_ext, port.counters_ext)):
                for name, value in new.items():
                    before = old.get(name)
                    if value is None or before is None:
                        continue
                    if value < before:
                        return False
                    forward = forward or value > before
    return forward


def _listing_failed(errors: list[dict[str, str]], suffix: str) -> bool:
    """True when the node could not list a directory: absence from it then proves nothing."""
    return any(e["path"].endswith(suffix) for e in errors)


def apply_snapshot(
    snap: SnapshotIn,
    rows: NodeRows,
    changes: Changes,
    now: datetime,
    kind: str = Node.Kind.HOST,
    budget: node_budget.NodeBudget | None = None,
) -> IngestResult:
    """Apply `snap` to its node's rows; a node of another `kind` (a host's snapshot naming a switch), or a host
    past its budget (storage/budget.py), is refused."""
    if rows.node.kind != kind:
        note = f"{rows.node.name} is a {rows.node.kind} in the inventory, not a {kind}"
        return IngestResult(snap.host, snap.collected_at, REFUSED, note=note)
    status, clock_backwards = classify(snap, rows)
    result = IngestResult(snap.host, snap.collected_at, status, new_node=rows.new, clock_backwards=clock_backwards)
    if status != STORED:
        return result
    node = rows.node
    budget = budget or node_budget.NodeBudget.current()
    if kind == Node.Kind.HOST:
        reason = node_budget.refusal(snap, rows, budget)
        if reason is not None:
            _refuse(node, reason, now, changes)
            result.status, result.note = REFUSED, reason
            return result
    node.refused_reason = ""  # within its budget again; refused_at and refused_snapshots stay as its history
    node.last_collected_at = snap.collected_at
    node.last_ingested_at = now
    node.stale = False  # it answers again: every surface shows its ports' state, not "unknown"
    node.read_errors = snap.errors
    node.source = snap.source
    if node.pk is not None:
        changes.nodes[node.pk] = node
    # None from schema 1: a node that went back to it has its GPUs unknown again; the wire form's "as last sent"
    # (gpus_same) keeps them.
    if not snap.gpus_same and node.gpus != snap.gpus:
        node.gpus = snap.gpus
        if node.pk is not None:
            changes.gpus[node.pk] = node
    changes.readings[node.pk] = rows
    if rows.new or rows.seen_until is None or snap.ts <= rows.seen_until:
        rows.checkpoint_due = True  # (polls replayed in time order must be the order they were applied)
    rows.seen_until = snap.ts if rows.seen_until is None else max(rows.seen_until, snap.ts)
    rows.new = False
    normhold.hold_if_jumped(node, rows.devices, rows.ports, snap.devices, now)  # before its rows take the snapshot

    samples = changes.samples.setdefault((node.pk, snap.collected_at), [])
    for d in snap.devices:
        device = _device(d, rows, changes, snap, result)
        known = rows.ports.setdefault(d.name, {})
        for p in d.ports:
            if not rows.hw_due and (p.hw_counters is not AS_LAST_SENT or p.number not in known):
                port = known.get(p.number)  # (a switch port's are {} at every sweep: the same)
                rows.hw_due = port is None or p.hw_counters != port.hw_counters
            if not _port(p, device, known, changes, samples, snap, result):
                rows.checkpoint_due = True
        if len(known) > len(d.ports) and not _listing_failed(snap.errors, f"/class/infiniband/{d.name}/ports"):
            present = {p.number for p in d.ports}
            for number, port in known.items():
                if number not in present:
                    _missing_port(port, changes, result, f"{d.name}/{number}", budget)

    if len(rows.devices) > len(snap.devices) and not _listing_failed(snap.errors, "/class/infiniband"):
        present = {d.name for d in snap.devices}
        for name, device in rows.devices.items():
            if name in present or node_budget.left_alone(device, budget):
                continue
            if device.vanished_at is None:
                device.vanished_at = snap.collected_at
                result.vanished.append(name)
            device.missed_polls += 1
            if device.pk is not None:  # else it is inserted as it is now
                changes.devices[device.pk] = device
            result.missing_devices.append(device)
            for port in rows.ports.get(name, {}).values():
                _missing_port(port, changes, result, None, budget)
    return result


def _refuse(node: Node, reason: str, now: datetime, changes: Changes) -> None:
    """Say on the node why its snapshot was not stored (its page, the API, /healthz); nothing else changes."""
    node.refused_reason = reason
    node.refused_at = now
    node.refused_snapshots += 1
    if node.pk is not None:
        changes.nodes[node.pk] = node


def _device(d: DeviceIn, rows: NodeRows, changes: Changes, snap: SnapshotIn, result: IngestResult) -> Device:
    device = rows.devices.get(d.name)
    if device is None:
        device = Device(node=rows.node, name=d.name, first_seen_at=snap.collected_at, **d.attrs)
        rows.devices[d.name] = device
        changes.new_devices.append(device)
        return device
    dirty = False
    for key, value in d.attrs.items():
        if getattr(device, key) != value:
            setattr(device, key, value)
            dirty = True
    if device.vanished_at is not None or device.missed_polls:
        if device.vanished_at is not None:
            result.returned.append(d.name)
        device.vanished_at = None
        device.missed_polls = 0
        dirty = True
    if dirty and device.pk is not None:
        changes.devices[device.pk] = device
    return device


def _port(
    p: PortIn,
    device: Device,
    known: dict[int, Port],
    changes: Changes,
    samples: list,
    snap: SnapshotIn,
    result: IngestResult,
) -> bool:
    """Apply one port's reading, its sample added to `samples` (its node-poll's); False when what it did to the
    port's history cannot be replayed from its sample alone (telemetry.storage.catchup)."""
    port = known.get(p.number)
    previous = prev_reading = interval = None
    returned = False
    if port is None:
        port = Port(device=device, number=p.number, first_seen_at=snap.collected_at)
        known[p.number] = port
        changes.new_ports.append(port)
    else:
        previous = LinkState.of(port)
        if port.last_collected_at is not None:
            prev_reading = Reading(port.counters, port.counters_ext, port.capped)
            # Whole µs, as packed in the sample: a replay of the ring gives the very same float.
            interval = ((snap.collected_at - port.last_collected_at) // _US) / 1e6
        returned = port.vanished_at is not None

    d = port_deltas(prev_reading, Reading(p.counters, p.counters_ext, p.capped), interval)
    rare = d.resets or port.missed_polls or port.vanished_at is not None or port.capped != p.capped
    if rare and port.pk is not None:
        changes.rare[port.pk] = port
    same_state = previous is not None and (previous.state_id, previous.phys_state_id) == (p.state_id, p.phys_state_id)
    prev_hw = port.hw_counters if prev_reading is not None else None  # (before this poll's replace them)
    port.state_polls = port.state_polls + 1 if same_state else 1
    hw = p.hw_counters
    if hw is AS_LAST_SENT:  # the agent left them out: as it sent them last, which this row holds (or none yet)
        hw = port.hw_counters if port.hw_counters is not None else {}
    port.counters, port.counters_ext, port.capped, port.hw_counters = p.counters, p.counters_ext, p.capped, hw
    port.last_collected_at = snap.collected_at
    port.missed_polls = 0
    port.vanished_at = None
    if d.resets:
        port.last_reset_at = snap.collected_at
    # The link rarely changes: its columns are written only when one did.
    link_changed = _LINK(port) != _LINK(p)
    current = previous if previous is not None and not link_changed else LinkState.of(p)
    if link_changed:
        for name in LINK_FIELDS:
            setattr(port, name, getattr(p, name))
    if is_up(p.state_id):
        best_changed = _remember_best(port, p)
        link_changed |= best_changed or not port.ever_up
        port.ever_up = True
    if link_changed and port.pk is not None:
        changes.links[port.pk] = port

    deltas = dict(zip(DELTA_COUNTERS, d.deltas, strict=True))
    if is_ethernet(p.link_layer):  # a RoCE port's lossless counters, for the health rules (not the samples)
        deltas.update(named_deltas(LOSSLESS, prev_hw, hw, interval))
    resets = tuple(COUNTER_NAMES[c] for c in d.resets) if d.resets else ()
    capped = tuple(COUNTER_NAMES[c] for c in d.capped) if d.capped else ()
    if interval is not None:
        unknown = deltas if d.clock_backwards else capped
        port.recent = ring.push(port.recent, snap.ts, interval, ring.kept_deltas(deltas, unknown))
    samples.append(
        (
            port,
            (
                interval,
                p.state_id,
                p.phys_state_id,
                p.speed,
                p.lanes,
                bool(d.resets),
                bool(d.capped),
            ),
            d.deltas,
        )
    )
    result.ports_ingested += 1
    result.samples_written += 1
    result.resets += len(d.resets)
    result.capped += len(d.capped)
    if returned:
        result.returned.append(f"{device.name}/{p.number}")
    result.observations.append(
        PortObservation(
            port=port,
            device=device,
            current=current,
            previous=previous,
            interval_s=interval,
            deltas=deltas,
            resets=resets,
            capped=capped,
            first_poll=prev_reading is None,
            returned=returned,
        )
    )
    return interval is not None and not d.clock_backwards and not d.capped


def _remember_best(port: Port, p: PortIn) -> bool:
    """Keep the fastest speed and the widest width held while up (judged separately, as health does).

    Returns whether the best link changed."""
    if p.speed is None or p.lanes is None or (p.speed == port.best_speed and p.lanes == port.best_lanes):
        return False
    held = make_rate(port.best_speed, port.best_lanes) if port.best_speed and port.best_lanes else None
    best = better_link(held, Rate(p.rate_gbps or 0.0, p.lanes, p.speed))
    changed = (best.speed, best.lanes) != (port.best_speed, port.best_lanes)
    port.best_speed, port.best_lanes = best.speed, best.lanes
    return changed


def _missing_port(
    port: Port, changes: Changes, result: IngestResult, label: str | None, budget: node_budget.NodeBudget
) -> None:
    """Count a poll `port` was missing from, until it has been judged vanished: then it is left alone."""
    if node_budget.left_alone(port, budget):
        return
    if port.vanished_at is None:
        port.vanished_at = result.collected_at
        if label is not None:  # a port of a vanished device is reported as the device
            result.vanished.append(label)
    port.missed_polls += 1
    if port.pk is not None:
        changes.gone[port.pk] = port
    result.missing_ports.append(port)
