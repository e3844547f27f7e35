"""Every number the health rules compare against, with its unit and where it comes from.

Defaults follow docs/infiniband.md §4 where an operator tool publishes one;
the rest are our own choices, marked as such. Settings override any of them with
`Thresholds.from_mapping({...})`, which rejects unknown names and bad values loudly
(a typo in settings must not silently fall back to a default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace


def _t(default: float, unit: str, source: str):
    return field(default=default, metadata={"unit": unit, "source": source})


@dataclass(frozen=True, slots=True)
class Thresholds:
    # Symbol errors: the main bad-cable signal.
    symbol_errors_per_hour: int = _t(120, "symbol errors/h", "NVIDIA NIC health: above 120/h, BER worse than 1e-12")
    symbol_errors_per_poll: int = _t(10, "symbol errors per poll", "ibqueryerrors error_thresholds: 10 per check")
    # A poll longer than this (a gap after missed polls) is too long to call its errors "fast".
    fast_window_max_s: float = _t(60.0, "s", "our choice")

    # Flapping: the link retrains (link_error_recovery) or goes down (link_downed) and comes back.
    link_error_recovery_per_minute: int = _t(5, "link error recoveries/min", "NVIDIA NIC health: above 5/min")
    link_error_recovery_per_hour: int = _t(
        10, "link error recoveries/h", "ibqueryerrors: 10 per check, applied per hour"
    )
    # One bounce is recorded as info; a second within the hour is flapping (critical).
    link_downed_per_hour: int = _t(1, "link downs/h", "NVIDIA NIC health: any increase is serious")
    # A link that has neither gone down nor retrained for this long has stopped flapping: its event
    # clears (after the usual clean polls) though the hour still counts the bounces.
    flapping_quiet_s: float = _t(900.0, "s without a bounce", "our choice: 15 minutes stable")

    # Packet errors (counts in the last hour).
    port_rcv_errors_per_hour: int = _t(10, "receive errors/h", "ibqueryerrors: PortRcvErrors 10 per check")
    remote_physical_errors_per_hour: int = _t(10, "remote physical errors/h", "our choice, as PortRcvErrors")
    xmit_discards_per_hour: int = _t(100, "transmit discards/h", "our choice")
    # Any increase is serious (NVIDIA NIC health): "more than 0".
    local_link_integrity_errors_per_hour: int = _t(0, "link integrity errors/h", "NVIDIA NIC health: any increase")
    buffer_overrun_errors_per_hour: int = _t(0, "buffer overrun errors/h", "NVIDIA NIC health: any increase")

    # Congestion: the share of the link's time lost while the port had data but no credits, from port_xmit_wait
    # in the bytes one count is on the port's device (collectors.xmitwait, docs/infiniband.md §3b).
    congestion_share: float = _t(
        0.05,
        "share of link time lost (0-1)",
        "our choice: measurable below a 32-bit port_xmit_wait's cap on 4X NDR at a 10 s poll (docs/health.md)",
    )
    congestion_window_s: float = _t(300.0, "s", "UFM keeps 5 minutes of counter history")

    # States.
    down_after_polls: int = _t(1, "polls", "DESIGN.md: say within one poll")
    # opensm's default sweep is 10 s: INIT/ARMED on LinkUp for two polls means no SM answered.
    no_sm_after_polls: int = _t(2, "polls", "our choice")
    stale_after_polls: int = _t(3, "missed polls", "our choice: one late snapshot is not an outage")
    clock_skew_s: float = _t(120.0, "s between a snapshot's date and its arrival", "our choice: NTP keeps ms")
    vanished_after_polls: int = _t(
        1, "polls", "sysfs lists a device only while its driver holds it: gone means gone now"
    )

    # Expectations and events.
    fabric_min_ports: int = _t(4, "node votes for one HCA model (one per node and link)", "our choice")
    resolve_after_polls: int = _t(3, "clean polls", "our choice: hysteresis")

    # Lossless Ethernet on RoCE ports (health/rules/lossless.py), over one poll: docs/health.md, "Lossless Ethernet".
    pfc_pause_share: float = _t(
        0.1,
        "share of the poll's time paused on one priority, each way (0-1)",
        "our choice, on rdma_exporter's pause occupancy (rate of the pause duration in µs / 1e6)",
    )
    pause_storm_events: int = _t(0, "pause-storm events per poll", "mlx5 PFC stall prevention: any is a stall")
    cnp_per_s: float = _t(10_000.0, "CNPs/s sent or handled", "our choice: far above a healthy port's trickle")
    out_of_sequence_per_s: float = _t(100.0, "out_of_sequence/s", "NVSentinel NIC health monitor: above 100/s")
    packet_seq_err_per_s: float = _t(1.0, "packet_seq_err/s", "our choice, as local_ack_timeout_err")
    local_ack_timeout_per_s: float = _t(1.0, "local_ack_timeout_err/s", "NVSentinel NIC health monitor: above 1/s")
    rx_discards_phy_per_s: float = _t(1.0, "rx_discards_phy/s", "our choice: a lossless priority drops nothing")

    def __post_init__(self) -> None:
        for name in _POSITIVE:
            if not getattr(self, name) > 0:
                raise ValueError(f"health threshold {name}: must be above 0, got {getattr(self, name)!r}")
        if self.congestion_share > 1:
            raise ValueError(f"health threshold congestion_share: a share of time, 0-1, got {self.congestion_share!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Thresholds:
        """Defaults overridden by `data` (e.g. a settings dict); numeric strings are accepted."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown health threshold(s): {', '.join(unknown)}")
        changes: dict[str, float] = {}
        for name, raw in data.items():
            want_int = isinstance(known[name].default, int)
            changes[name] = _number(name, raw, want_int)
        return replace(cls(), **changes)

    @classmethod
    def describe(cls) -> list[tuple[str, float, str, str]]:
        """(name, default, unit, source) for every threshold: for docs and the settings page."""
        return [(f.name, f.default, f.metadata["unit"], f.metadata["source"]) for f in fields(cls)]


# Zero would make these meaningless (a window of 0 s, an event resolved before it is clear).
_POSITIVE = (
    "fast_window_max_s",
    "congestion_window_s",
    "flapping_quiet_s",
    "down_after_polls",
    "no_sm_after_polls",
    "stale_after_polls",
    "clock_skew_s",
    "vanished_after_polls",
    "fabric_min_ports",
    "resolve_after_polls",
)


def _number(name: str, raw: object, want_int: bool) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ValueError(f"health threshold {name}: expected a number, got {raw!r}")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"health threshold {name}: expected a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"health threshold {name}: must be a finite number >= 0, got {raw!r}")
    if want_int:
        if value != int(value):
            raise ValueError(f"health threshold {name}: expected a whole number, got {raw!r}")
        return int(value)
    return value


DEFAULT = Thresholds()
