"""Lossless Ethernet on a RoCE port, judged over one poll, in an Ethernet engineer's words.

Each rule reads this poll's deltas of the port's lossless counters (collectors/roce.py: mlx5's hw_counters
and the netdev's ethtool statistics, which ingest turns into deltas beside the PMA counters'):

- **PFC pause received** (`rx_prio<N>_pause_duration`): the switch told this port to stop sending on a
  priority for more than `pfc_pause_share` of the poll. It points at the network: congestion at or beyond
  the switch port, which pushes back on the senders.
- **PFC pause sent** (`tx_prio<N>_pause_duration`): this port told the switch to stop. It points at the
  host: the NIC cannot hand frames to host memory fast enough (PCIe, memory, a receive queue not drained).
  Said by the pause-storm rule instead while the watchdog fires.
- **Pause storm** (`tx_pause_storm_warning_events`, `tx_pause_storm_error_events`): the NIC stalled past the
  watermark (warning), past the timeout and stopped sending pause (critical: frames may drop). A stuck host
  that keeps pausing spreads head-of-line blocking through every switch upstream.
- **CNP storm** (`rp_cnp_handled`, `np_cnp_sent`): DCQCN's congestion notifications past `cnp_per_s`:
  switches keep marking ECN on this port's flows (handled: its sending slowed) or on flows to it (sent).
- **RoCE packet loss** (`out_of_sequence`, `packet_seq_err`, `local_ack_timeout_err`): signs of frames lost
  on a path that should drop none.
- **Drops on arrival** (`rx_discards_phy`): the NIC dropped frames for lack of receive buffer. Said by the
  pause-storm rule instead while the watchdog has stopped pause.

Thresholds and sources: fabricweb/thresholds.py and docs/health.md ("Lossless Ethernet").
"""

from __future__ import annotations

from collectors import roce
from fabricweb.thresholds import Thresholds

from .common import CRITICAL, WARNING, ethernet, fmt_n, fmt_s, port_finding, seconds
from .findings import Finding, Kind, port_key
from .view import PortView
from .window import known_delta


def _durations(direction: str) -> tuple[str, ...]:
    return tuple(roce.wire(roce.pause_duration(direction, p)) for p in roce.PRIORITIES)


STORM = (roce.wire(roce.STORM_WARNING), roce.wire(roce.STORM_ERROR))
DISCARDS = roce.wire(roce.RX_DISCARDS_PHY)
# The counters each kind is judged on: when one's delta is unknown this poll, so is the kind.
KIND_COUNTERS: dict[Kind, tuple[str, ...]] = {
    Kind.PAUSE_RECEIVED: _durations("rx"),
    Kind.PAUSE_SENT: _durations("tx"),
    Kind.PAUSE_STORM: STORM,
    Kind.CNP_STORM: (roce.CNP_HANDLED, roce.CNP_SENT),
    Kind.ROCE_LOSS: (roce.OUT_OF_SEQUENCE, roce.PACKET_SEQ_ERR, roce.LOCAL_ACK_TIMEOUT),
    Kind.RX_DISCARDS: (DISCARDS,),
}
_LOSS = (  # counter, threshold (Thresholds field), what it counts
    (roce.OUT_OF_SEQUENCE, "out_of_sequence_per_s", "packets arrived out of sequence"),
    (roce.PACKET_SEQ_ERR, "packet_seq_err_per_s", "NAKs for a sequence gap received"),
    (roce.LOCAL_ACK_TIMEOUT, "local_ack_timeout_per_s", "ACK timeouts (resent after no answer)"),
)


def judge_lossless(view: PortView, t: Thresholds) -> list[Finding]:
    """Every lossless finding of a RoCE port at this poll; [] for any other port or without an interval."""
    if not ethernet(view):
        return []
    interval = seconds(view.interval_s)
    if interval <= 0:
        return []
    d = view.deltas
    storm = _storm(view, d, interval, t)
    found = [
        _pause(view, d, interval, t, "rx"),
        None if storm is not None else _pause(view, d, interval, t, "tx"),
        storm,
        _cnp(view, d, interval, t),
        _loss(view, d, interval, t),
        None if storm is not None else _discards(view, d, interval, t),
    ]
    return [f for f in found if f is not None]


def unknown_keys(view: PortView) -> set[str]:
    """The lossless kinds of a RoCE port this poll says nothing about (a counter's delta unknown)."""
    if not ethernet(view):
        return set()
    d = view.deltas
    return {
        port_key(kind, view.node, view.device, view.port)
        for kind, counters in KIND_COUNTERS.items()
        if any(known_delta(d.get(c)) is None for c in counters)
    }


def quiet_key(view: PortView, t: Thresholds) -> frozenset[str] | None:
    """For the quiet-port path (health/engine/quiet.py): None when a lossless rule finds something at this poll, else
    the kinds it cannot judge. The rules read this poll's deltas alone, so two polls with the same key judge alike,
    however the counters moved below their thresholds: a RoCE port that pauses a little stays quiet."""
    if judge_lossless(view, t):
        return None
    return frozenset(unknown_keys(view))


def _n(d, name: str) -> int:
    return known_delta(d.get(name)) or 0


def _worst_pause(d, interval: float, direction: str) -> tuple[int, float]:
    """(priority, share of the poll paused) of the priority paused longest in `direction`."""
    shares = [(_n(d, name) / 1e6 / interval, p) for p, name in zip(roce.PRIORITIES, _durations(direction), strict=True)]
    share, prio = max(shares)
    return prio, min(share, 1.0)


def _pause(view: PortView, d, interval: float, t: Thresholds, direction: str) -> Finding | None:
    prio, share = _worst_pause(d, interval, direction)
    if share <= t.pfc_pause_share:
        return None
    frames = _n(d, roce.wire(roce.pause(direction, prio)))
    counter = roce.pause_duration(direction, prio)
    if direction == "rx":
        kind, what = Kind.PAUSE_RECEIVED, "received PFC pause"
        meaning = (
            "the switch is telling this port to stop sending: congestion in the network, at or beyond the switch "
            "port (look at its egress queue and where the traffic converges), not this host"
        )
    else:
        kind, what = Kind.PAUSE_SENT, "sent PFC pause"
        meaning = (
            "this port is telling the switch to stop: the host is not taking what arrives, so look at the host or "
            "its PCIe link (receive buffers, PCIe, host memory, a slow consumer), not the network"
        )
    return port_finding(
        view,
        kind,
        WARNING,
        f"{what} on priority {prio} for {share:.0%} of the last {fmt_s(interval)} ({counter}, over "
        f"{t.pfc_pause_share:.0%}; {fmt_n(frames)} pause frames): {meaning}",
        priority=prio,
        paused_share=round(share, 3),
        pause_frames=frames,
        threshold_share=t.pfc_pause_share,
    )


def _storm(view: PortView, d, interval: float, t: Thresholds) -> Finding | None:
    warnings, errors = (_n(d, name) for name in STORM)
    if warnings <= t.pause_storm_events and errors <= t.pause_storm_events:
        return None
    prio, share = _worst_pause(d, interval, "tx")
    drops = _n(d, DISCARDS)
    if errors > t.pause_storm_events:
        what = (
            f"the NIC's watchdog found the port stalled past its timeout {fmt_n(errors)} time(s) in the last "
            f"{fmt_s(interval)} and stopped sending pause ({roce.STORM_ERROR})"
        )
    else:
        what = (
            f"the NIC's watchdog found the port stalled past its watermark {fmt_n(warnings)} time(s) in the last "
            f"{fmt_s(interval)} ({roce.STORM_WARNING})"
        )
    evidence = f"; it sent PFC pause on priority {prio} for {share:.0%} of the time" if share > 0 else ""
    if drops:
        evidence += f", and dropped {fmt_n(drops)} frames on arrival ({roce.RX_DISCARDS_PHY})"
    return port_finding(
        view,
        Kind.PAUSE_STORM,
        CRITICAL if errors > t.pause_storm_events else WARNING,
        f"PFC pause storm: {what}{evidence}. This host stopped draining its receive queue: look at the host "
        "(driver, PCIe, a hung application), not the network; a storm left running spreads head-of-line "
        "blocking through the switches upstream",
        storm_warnings=warnings,
        storm_errors=errors,
        priority=prio,
        paused_share=round(share, 3),
        rx_discards=drops,
    )


def _cnp(view: PortView, d, interval: float, t: Thresholds) -> Finding | None:
    handled = _n(d, roce.CNP_HANDLED) / interval
    sent = _n(d, roce.CNP_SENT) / interval
    if handled <= t.cnp_per_s and sent <= t.cnp_per_s:
        return None
    parts = []
    if handled > t.cnp_per_s:
        parts.append(
            f"it handled {fmt_n(handled)} CNPs/s ({roce.CNP_HANDLED}): switches keep marking ECN on its flows "
            "out, so DCQCN keeps slowing its sending (congestion on the path away from this host)"
        )
    if sent > t.cnp_per_s:
        marked = _n(d, roce.ECN_MARKED) / interval
        parts.append(
            f"it sent {fmt_n(sent)} CNPs/s ({roce.CNP_SENT}) for {fmt_n(marked)} ECN-marked packets/s arriving "
            f"({roce.ECN_MARKED}): congestion on the path to this host (incast at its switch port)"
        )
    return port_finding(
        view,
        Kind.CNP_STORM,
        WARNING,
        f"ECN/CNP storm over the last {fmt_s(interval)} (over {fmt_n(t.cnp_per_s)} CNPs/s): {'; '.join(parts)}; "
        "check the switches' ECN marking thresholds and where the traffic converges",
        cnp_handled_per_s=round(handled, 1),
        cnp_sent_per_s=round(sent, 1),
        threshold_per_s=t.cnp_per_s,
    )


def _loss(view: PortView, d, interval: float, t: Thresholds) -> Finding | None:
    parts, details = [], {}
    for counter, threshold, what in _LOSS:
        per_s = _n(d, counter) / interval
        limit = getattr(t, threshold)
        details[f"{counter}_per_s"] = round(per_s, 1)
        if per_s > limit:
            parts.append(f"{fmt_n(per_s)} {what}/s ({counter}, over {fmt_n(limit)}/s)")
    if not parts:
        return None
    return port_finding(
        view,
        Kind.ROCE_LOSS,
        WARNING,
        f"RoCE packets lost on a network that should drop none, over the last {fmt_s(interval)}: "
        f"{'; '.join(parts)}; check that PFC is on for RoCE's priority end to end, and the links' error counters",
        **details,
    )


def _discards(view: PortView, d, interval: float, t: Thresholds) -> Finding | None:
    per_s = _n(d, DISCARDS) / interval
    if per_s <= t.rx_discards_phy_per_s:
        return None
    return port_finding(
        view,
        Kind.RX_DISCARDS,
        WARNING,
        f"dropping {fmt_n(per_s)} frames/s on arrival for lack of receive buffer over the last {fmt_s(interval)} "
        f"({roce.RX_DISCARDS_PHY}, over {fmt_n(t.rx_discards_phy_per_s)}/s): the NIC cannot absorb what the "
        "switch sends; check that PFC is on for the priority, and that the host drains its queues",
        discards_per_s=round(per_s, 1),
        threshold_per_s=t.rx_discards_phy_per_s,
    )
