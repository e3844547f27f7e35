"""What one host may cost the central side: past a bound, its snapshots are refused, with the reason.

A host runs the node agent with its own key, on a machine users log in to: it may go rogue and still
sign what it sends. What it can make ingest do is bounded here, checked against the rows ingest holds
for the node in memory (no query):

- the ports it may add per hour (FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR): a real host has a handful of
  HCAs; a snapshot naming hundreds of new ports, or new device names at every poll, is refused;
- the ports it may leave vanished (FABRIC_NODE_MAX_VANISHED_PORTS), until they retire;
- the bytes it may send per minute (FABRIC_NODE_MAX_BYTES_PER_MINUTE): the consumer's side, before
  anything is decoded (telemetry/intake/spend.py).

A port or device missing from its node's snapshots is counted, written and judged only until it is
judged vanished (the health threshold `vanished_after_polls`), then left alone: its event stays open
until it returns or retires. Vanished rows retire FABRIC_VANISHED_RETIRE_AFTER after they vanished:
the retention job deletes them (telemetry/history/retire.py), and until then apply skips them.

A switch's ports come from a fabric collector's sweep of the fabric, not from a host: not bounded here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings

from fabricweb.thresholds import Thresholds

if TYPE_CHECKING:
    from fabricweb.inventory.models import Port

    from ..validation.typed import SnapshotIn
    from .apply import NodeRows

HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class NodeBudget:
    new_ports_per_hour: int
    vanished_ports: int
    retire_after: timedelta
    # Polls a missing port or device is counted for: until the rules judge it vanished.
    missing_judged_for: int

    @classmethod
    def current(cls) -> NodeBudget:
        """The bounds of the settings (FABRIC_NODE_MAX_*, FABRIC_VANISHED_RETIRE_AFTER, FABRIC_THRESHOLDS)."""
        return _budget(
            settings.FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR,
            settings.FABRIC_NODE_MAX_VANISHED_PORTS,
            settings.FABRIC_VANISHED_RETIRE_AFTER,
            tuple(sorted(settings.FABRIC_THRESHOLDS.items())),
        )

    def retired(self, row, at: datetime) -> bool:
        """Whether a device or port row vanished more than `retire_after` before `at`."""
        return row.vanished_at is not None and row.vanished_at <= at - self.retire_after


@lru_cache(maxsize=8)
def _budget(new_ports: int, vanished: int, retire_after_s: float, thresholds: tuple) -> NodeBudget:
    judged_for = Thresholds.from_mapping(dict(thresholds)).vanished_after_polls
    return NodeBudget(new_ports, vanished, timedelta(seconds=retire_after_s), max(int(judged_for), 1))


def refusal(snap: SnapshotIn, rows: NodeRows, budget: NodeBudget) -> str | None:
    """Why this host's snapshot must not be stored, in an operator's words; None when it is within bounds."""
    ports = rows.ports
    new = 0
    listed = 0
    # (Plain loops: this runs for every host snapshot, and a sum over a generator a device cost more than the
    # rest of the check for the one-port HCAs of most hosts.)
    for d in snap.devices:
        known = ports.get(d.name)
        listed += len(d.ports)
        if known is None:
            new += len(d.ports)
            continue
        for p in d.ports:
            if p.number not in known:
                new += 1
    if new:
        since = snap.collected_at - HOUR
        added = sum(1 for known in ports.values() for port in known.values() if port.first_seen_at > since)
        if added + new > budget.new_ports_per_hour:
            before = f" after {added} in the last hour" if added else ""
            return (
                f"snapshot would add {new} ports{before}: more than the {budget.new_ports_per_hour} a node may add "
                "per hour (FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR)"
            )
    held = sum(map(len, ports.values()))
    if held + new > listed:  # some port it holds is not in this snapshot
        vanished = _vanished_after(snap, rows, budget)
        if vanished > budget.vanished_ports:
            return (
                f"snapshot would leave {vanished} ports vanished: more than the {budget.vanished_ports} a node may "
                "keep until they retire (FABRIC_NODE_MAX_VANISHED_PORTS)"
            )
    return None


def _vanished_after(snap: SnapshotIn, rows: NodeRows, budget: NodeBudget) -> int:
    """How many of the node's ports would be vanished, not retired, once `snap` is applied."""
    present = {(d.name, p.number) for d in snap.devices for p in d.ports}
    count = 0
    for name, known in rows.ports.items():
        for number, port in known.items():
            if (name, number) not in present and not budget.retired(port, snap.collected_at):
                count += 1
    return count


def left_alone(row: Port, budget: NodeBudget) -> bool:
    """A missing device or port already judged vanished (or retired): not counted, written or judged again."""
    return row.vanished_at is not None and row.missed_polls >= budget.missing_judged_for
