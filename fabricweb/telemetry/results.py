"""What ingest reports: per snapshot a result, and per port the observation the health rules judge.

Observations are handed to receivers of `fabricweb.telemetry.signals.snapshots_ingested`
inside the ingest transaction, so events written there commit or roll back with the data.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

from fabricweb.inventory.models import Device, Port

from .validation.portfields import LINK_STATE

STORED = "stored"
DUPLICATE = "duplicate"  # the node's last applied snapshot again: nothing to do
STALE = "stale"  # older than the node's last applied snapshot: not allowed to move state back
REFUSED = "refused"  # names a node of another kind (a host's snapshot naming a switch): `note` says which


class LinkState(namedtuple("LinkState", LINK_STATE)):
    """A port's link: the LINK fields of validation/portfields.py, in its order (state_id, state_name, phys_state_id,
    phys_state_name, link_layer, rate_gbps, lanes, speed). A tuple, not a frozen dataclass: built twice per port
    and poll, at a fifth of the cost."""

    __slots__ = ()

    @classmethod
    def of(cls, port) -> LinkState:
        """From a Port row or a PortIn (same field names)."""
        return tuple.__new__(cls, _LINK_STATE(port))


_LINK_STATE = attrgetter(*LinkState._fields)


@dataclass(slots=True)
class PortObservation:
    """One port at one poll, as the health rules need it.

    `port` is the row as just updated (current link, raw counters, best link, `recent`
    ring including this poll, state_polls); `port.device` and `port.device.node` are
    attached, so reading them costs no query. `device` is `port.device`, without the ORM's descriptor (read
    for every port at every poll).
    """

    port: Port
    device: Device
    current: LinkState
    previous: LinkState | None  # None on the port's first poll
    interval_s: float | None  # since the port's previous poll; None first; <= 0 if the clock stepped back
    # Counter name (counters/ file name: symbol_error, port_xmit_wait, port_rcv_data...) -> delta
    # in base units (bytes for data), None when unknown.
    deltas: dict[str, int | None]
    resets: tuple[str, ...] = ()  # counters that went down since the previous poll
    capped: tuple[str, ...] = ()  # counters whose delta is unknown because they stopped at all-ones
    first_poll: bool = False
    returned: bool = False  # had vanished, and is back


@dataclass(slots=True)
class IngestResult:
    node: str
    collected_at: datetime
    status: str = STORED
    new_node: bool = False
    clock_backwards: bool = False
    ports_ingested: int = 0
    samples_written: int = 0
    resets: int = 0  # counters seen going down (summed over ports)
    capped: int = 0  # counters whose delta is unknown because of a cap (summed over ports)
    vanished: list[str] = field(default_factory=list)  # "mlx5_1" or "mlx5_0/2", newly absent this poll
    returned: list[str] = field(default_factory=list)  # same, back after being absent
    observations: list[PortObservation] = field(default_factory=list)
    # Rows absent from this snapshot (vanished_at and missed_polls already updated).
    missing_devices: list[Device] = field(default_factory=list)
    missing_ports: list[Port] = field(default_factory=list)
    # Findings only the fabric view can make about this (switch) node, judged with its ports
    # (fabricweb.fabric.judge: an unreachable switch, cabling), and the keys it could not judge.
    extra_findings: list = field(default_factory=list)
    note: str = ""

    def summary(self) -> str:
        if self.status != STORED:
            why = f" ({self.note})" if self.note else ""
            return f"{self.node} {self.collected_at:%Y-%m-%dT%H:%M:%S}Z: {self.status}, nothing stored{why}"
        parts = [f"{self.ports_ingested} ports", f"{self.samples_written} samples"]
        for label, n in (("resets", self.resets), ("capped", self.capped)):
            if n:
                parts.append(f"{n} {label}")
        if self.vanished:
            parts.append(f"vanished: {', '.join(self.vanished)}")
        if self.clock_backwards:
            parts.append("node clock stepped back")
        return f"{self.node} {self.collected_at:%Y-%m-%dT%H:%M:%S}Z: " + ", ".join(parts)
