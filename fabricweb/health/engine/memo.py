"""Quiet ports' last judgements, and reusing them without building a view: the engine's fast path.

`quiet` says when judging a port can only repeat its last judgement: when the
`inputs` of its view equal those of its last quiet poll. Building the view and
walking the whole ring to learn that cost more than the rest of judging a quiet
port, so the engine asks `reuse` first, which learns the same from what ingest holds:

- `raw_inputs`: what the view's inputs are worked out from (the norms in force, the
  names, the link, the best link, the device's model, PCIe link and path, which still
  counters are unknown and whether the wait is) equals that of the poll judged last;
- this poll's still counters are 0 or unknown (the same values as then), none capped;
- the ring is quiet and in time order: it was up to the poll judged last (checked in
  full when that poll was judged the full way), and since then ingest only appended
  this poll (telemetry/storage/ring.py: the entry before the last is that poll, perhaps
  merged with clean ones before it; the last is this one) and this poll is quiet.
  Any other history (another process's polls, a reloaded row) fails this check.

Then only the congestion rule runs, over the polls inside its window. A congested
port, and anything that fails a check, is judged the full way (engine._judge_port).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectors.facts import is_ethernet
from collectors.link import Rate
from fabricweb.inventory.ringcolumns import Ring
from fabricweb.telemetry.results import PortObservation
from fabricweb.thresholds import Thresholds

from ..records.context import Norms
from ..rules import Judgement, congested_share, path_key
from ..rules.findings import Kind, device_target, port_key, port_target
from ..rules.view import PortView
from ..rules.window import Count, known_delta, trailing
from .quiet import STILL, STILL_ROCE, WAIT, settle
from .waitlog import WaitLog

MAX_PORTS = 500_000  # past that the memo starts over (it only saves time)


@dataclass(slots=True)
class Held:
    """A port's last quiet judgement."""

    raw: tuple | None  # raw_inputs of that poll (None: not known, e.g. one of a node's several in a batch)
    inputs: tuple  # quiet.inputs of its view
    judgement: Judgement
    ts: float | None  # the ring was quiet and in time order up to this poll, its last entry (None: not so)
    congestion: str  # the port's congestion key
    plain: bool  # no congestion finding, and the congestion key unknown just when the wait is
    waits: WaitLog | None  # the ring's waits, while `ts` is set
    device_id: int | None  # what one wait count is worth (PortView.device_id), on this link: both in `raw`
    link: Rate | None
    target: str  # what its events are about (findings.port_target), and its device
    device_target: str


class HeldJudgements:
    """Port id -> its last quiet judgement, in this process (docs/architecture.md, "What processes keep in memory").
    Owner: this module; bound MAX_PORTS, then afresh; drop() when a port is not quiet, otherwise passed over on use
    unless reuse() finds its raw inputs and ring as they were; forget() drops them all (the tests' conftest, after
    each test)."""

    __slots__ = ("ports",)

    def __init__(self) -> None:
        self.ports: dict[int, Held] = {}

    def forget(self) -> None:
        self.ports = {}


HELD = HeldJudgements()


def device_inputs(device, norms: Norms, gpus_known: bool | None = None) -> tuple:
    """The part of raw_inputs that is the device's (and the norms'): the same for each of its ports at one poll,
    so worked out once a device (a switch has dozens of ports). `gpus_known`: whether its node's GPUs are known
    (the caller holds the node: not read through the device's descriptor)."""
    hca = device.hca_type
    return (
        norms.thresholds,
        norms.policies,
        norms.majorities.get(hca) if hca else None,  # its own model's: another model's count may change
        device.name,
        hca,
        device.board_id,  # a switch's device id (collectors.xmitwait.device_id; a host's is in hca_type)
        device.pci_current_gts,
        device.pci_current_width,
        device.pci_max_gts,
        device.pci_max_width,
        _path_key(device, device.node.gpus is not None if gpus_known is None else gpus_known),  # (rules/pciepath.py)
    )


def _path_key(device, known: bool) -> tuple | None:
    """path_key of the device's pcie_path, kept on the row with the path object it was worked out from: ingest gives
    a device a new pcie_path object when its path changes (never edits one in place), so while the row holds the
    same object, and its node's GPUs stay known or unknown, the key is the same. An 8-HCA host's eight paths of
    four bridges cost ~1.5 µs each to key again at every poll."""
    path = device.pcie_path
    kept = device.__dict__.get("_path_key")
    if kept is not None and kept[0] is path and kept[1] is known:
        return kept[2]
    key = path_key(path, known)
    device.__dict__["_path_key"] = (path, known, key)
    return key


def raw_inputs(obs: PortObservation, node: str, norms: Norms, device: tuple | None = None) -> tuple | None:
    """What quiet.inputs of this observation's view is worked out from, comparable with ==; None when capped.
    `device`: device_inputs of its port's device at this poll, when the caller has it.

    The still counters' values and types are in it: equal to those of a quiet poll, they are 0 or None."""
    if obs.capped:
        return None
    port, link, deltas = obs.port, obs.current, obs.deltas
    ib = link.link_layer == "InfiniBand" or not is_ethernet(link.link_layer)  # (the common case, told at once)
    still = tuple(map(deltas.get, STILL if ib else STILL_ROCE))
    return (
        device_inputs(obs.device, norms) if device is None else device,
        node,
        port.number,
        link.state_id,
        link.state_name,
        link.phys_state_id,
        link.phys_state_name,
        link.link_layer,
        link.speed,
        link.lanes,
        port.ever_up,
        port.best_speed,
        port.best_lanes,
        port.peer_label,
        port.capable_speed,
        port.capable_lanes,
        port.link_owner,
        still,
        tuple(map(type, still)),
        known_delta(deltas.get(WAIT)) is None,
    )


def reuse(obs: PortObservation, raw: tuple, ts: float, interval: float, t: Thresholds) -> Held | None:
    """The port's judgement at this poll (ts) held, when it is its last one again; else None: judge it in full."""
    port = obs.port
    held = HELD.ports.get(port.id)  # (id, not pk: the same, without the property's cost)
    if held is None or held.ts is None or held.raw != raw or not ts > held.ts:
        return None
    ring = port.recent
    if type(ring) is Ring:  # (in order, its entries [float, float, dict]: read only the last)
        times = ring.times
        if len(times) < 2 or times[-1] != ts or times[-2] != held.ts:
            return None
        this = ring[-1]
    else:
        try:
            this, before = ring[-1], ring[-2]
            if this[0] != ts or before[0] != held.ts or len(this) != 3 or type(this[2]) is not dict:
                return None
        except (TypeError, IndexError, KeyError):
            return None
    moved = this[2]
    if moved and (len(moved) > 1 or WAIT not in moved):
        for c in STILL:
            value = moved.get(c, 0)
            if value is not None and (type(value) is not int or value != 0):
                return None
    if not _calm(held, ts, interval, obs.deltas, ring, t):
        return None  # congested: its finding's words need the view
    held.waits.add(this)
    last = held.judgement
    if not held.plain:
        held.judgement = settle(last, None, raw[-1], held.congestion)
        held.plain = _plain(held.judgement, raw[-1], held.congestion)
    held.ts = ts
    return held


def _calm(held: Held, ts: float, interval: float, deltas: dict, ring: list, t: Thresholds) -> bool:
    """No congestion: told by bounds on the window's sums when they are far enough below, else by the sums."""
    device, link = held.device_id, held.link
    b = held.waits.bounds(ts, interval, deltas, ring, t.congestion_window_s)
    if b is not None and (b[0] == 0 or (b[1] > 0 and congested_share(Count(*b), device, link, t) is None)):
        return True
    window = trailing(ts, interval, deltas, ring, WAIT, t.congestion_window_s)
    return congested_share(window, device, link, t) is None


def get(pk: int) -> Held | None:
    return HELD.ports.get(pk)


def keep(pk: int, raw: tuple | None, inputs: tuple, j: Judgement, view: PortView) -> None:
    """Hold a quiet port's judgement made the full way, of this view."""
    held = HELD.ports
    if len(held) >= MAX_PORTS:
        held.clear()
    congestion = port_key(Kind.CONGESTION, view.node, view.device, view.port)
    wait_unknown = known_delta(view.deltas.get(WAIT)) is None
    ordered = _in_order_to(view.recent, view.ts)
    waits = WaitLog(view.recent) if ordered else None
    plain = _plain(j, wait_unknown, congestion)
    target, device = port_target(view.node, view.device, view.port), device_target(view.node, view.device)
    at = view.ts if ordered else None
    held[pk] = Held(raw, inputs, j, at, congestion, plain, waits, view.device_id, view.link, target, device)


def drop(pk: int) -> None:
    HELD.ports.pop(pk, None)


def _plain(j: Judgement, wait_unknown: bool, congestion: str) -> bool:
    return (congestion in j.unknown) == wait_unknown and all(f.kind is not Kind.CONGESTION for f in j.findings)


def _in_order_to(ring: object, ts: float) -> bool:
    """Entries with float times in strictly ascending order, the last at `ts` (this poll's, as ingest appends it)."""
    if type(ring) is Ring:
        return bool(ring.times) and ring.times[-1] == ts  # (in order as it holds them)
    if type(ring) not in (list, tuple):
        return False
    last = -math.inf
    for entry in ring:
        if type(entry) not in (list, tuple) or not entry or type(entry[0]) is not float or not entry[0] > last:
            return False
        last = entry[0]
    return last == ts
