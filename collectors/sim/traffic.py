"""Deterministic traffic and error counts for one port over a span of simulated time.

Randomness is derived from (seed, port, step) by hashing, not drawn from a running
generator, so a step's numbers do not depend on which other ports exist, are
vanished or faulted: the "RNG state" is just the seed and the step number.

Counts are kept as unbounded totals in the state; the tree shows each capped at its
PMA width (counters stop at all-ones, they never wrap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectors.xmitwait import DEFAULT_BYTES_PER_COUNT

from .hardware import COUNTERS, HW_COUNTERS, ROCE_HW_COUNTERS
from .layout import unit

DAY = 86400.0
MAX_UTILISATION = 0.9  # normal traffic stays below the link rate
# port_xmit_wait: a trickle of counts per second normally; saturated, the share of the port's time lost
# waiting for credits, twice the 5% congestion default. The simulated HCAs are in no row of the table, so a
# count is the assumed 8 bytes of port time (collectors.xmitwait): on 4X HDR 3.1e8 counts/s, capping 32 bits
# in ~14 s, as a real ConnectX-6's 32-bit counter would.
WAIT_COUNTS_NORMAL = 2000.0
SATURATED_LOST_SHARE = 0.1
# Flapping: link_error_recovery 6 per minute, above the 5/min "flapping" threshold operators use.
FLAP_RECOVERIES_PER_S = 0.1


@dataclass(frozen=True, slots=True)
class Profile:
    """A port's traffic character, fixed by seed and port key."""

    tx: float  # mean utilisation, fraction of capacity
    rx: float
    phase: float  # where the port's busy hours fall in the simulated day
    tx_packet: float  # mean bytes per packet
    rx_packet: float
    multicast: float  # fraction of packets that are multicast
    uptime: float  # simulated seconds of traffic already counted when the fabric is created


def profile(seed: int, key: str) -> Profile:
    def u(tag: str) -> float:
        return unit(seed, key, tag)

    return Profile(
        tx=0.05 + 0.5 * u("tx"),
        rx=0.05 + 0.5 * u("rx"),
        phase=2 * math.pi * u("phase"),
        tx_packet=1024 + 3072 * u("tx_packet"),
        rx_packet=1024 + 3072 * u("rx_packet"),
        multicast=1e-4 + 9e-4 * u("multicast"),
        uptime=3600 + 20 * DAY * u("uptime"),
    )


def utilisation(mean: float, phase: float, t: float, jitter: float) -> float:
    """Mean × a daily cycle × ±25 % per-step jitter, capped below the link rate."""
    daily = 0.65 + 0.35 * math.sin(2 * math.pi * t / DAY + phase)
    return min(MAX_UTILISATION, mean * daily * (0.75 + 0.5 * jitter))


def new_port_state(prof: Profile, capacity: float, hw: bool, roce: bool) -> dict:
    """Counters of a port that has been up for its profile's uptime, with no errors."""
    st = {"c": dict.fromkeys(COUNTERS, 0), "hw": {}, "carry": {}, "up": True}
    if hw:
        st["hw"] = dict.fromkeys(HW_COUNTERS + (ROCE_HW_COUNTERS if roce else ()), 0)
    mid = prof.uptime / 2
    add_traffic(
        st, prof, utilisation(prof.tx, prof.phase, mid, 0.5), utilisation(prof.rx, prof.phase, mid, 0.5),
        prof.uptime, capacity, saturated=False, roce=roce,
    )  # fmt: skip
    return st


def zero(st: dict, hw: bool) -> None:
    """Counters back to 0: perfquery -R (counters only) or a reboot/driver reload (hw too)."""
    for name in st["c"]:
        st["c"][name] = 0
    if hw:
        for name in st["hw"]:
            st["hw"][name] = 0


def step_traffic(st: dict, prof: Profile, seed: int, key: str, step: int, t: float, dt: float, **kw) -> None:
    """Add `dt` seconds of traffic for step `step` (t: simulated time at the step's middle)."""
    if kw.get("saturated"):
        u_tx = u_rx = 1.0
    else:
        u_tx = utilisation(prof.tx, prof.phase, t, unit(seed, key, step, "tx"))
        u_rx = utilisation(prof.rx, prof.phase + 1.0, t, unit(seed, key, step, "rx"))
    add_traffic(st, prof, u_tx, u_rx, dt, **kw)


def add_traffic(
    st: dict, prof: Profile, u_tx: float, u_rx: float, dt: float, capacity: float, saturated: bool, roce: bool
) -> None:
    """Bytes from utilisation × capacity (bytes/s); packets from bytes; the rest from packets."""
    c, hw = st["c"], st["hw"]
    tx_bytes = u_tx * capacity * dt
    rx_bytes = u_rx * capacity * dt
    tx_packets = math.ceil(tx_bytes / prof.tx_packet)
    rx_packets = math.ceil(rx_bytes / prof.rx_packet)
    tx_mcast = int(tx_packets * prof.multicast)
    rx_mcast = int(rx_packets * prof.multicast)
    c["port_xmit_data"] += int(tx_bytes) // 4  # the PMA counts 4-octet words
    c["port_rcv_data"] += int(rx_bytes) // 4
    c["port_xmit_packets"] += tx_packets
    c["port_rcv_packets"] += rx_packets
    c["unicast_xmit_packets"] += tx_packets - tx_mcast
    c["unicast_rcv_packets"] += rx_packets - rx_mcast
    c["multicast_xmit_packets"] += tx_mcast
    c["multicast_rcv_packets"] += rx_mcast
    lost = SATURATED_LOST_SHARE * capacity / DEFAULT_BYTES_PER_COUNT if saturated else WAIT_COUNTS_NORMAL * u_tx**4
    c["port_xmit_wait"] += int(dt * lost)
    if not hw:
        return
    hw["rx_write_requests"] += rx_packets // 4
    hw["rx_read_requests"] += rx_packets // 10
    hw["rx_atomic_requests"] += rx_packets // 1000
    if saturated:  # receive queues run dry under a full-rate flood
        hw["out_of_buffer"] += rx_packets // 100000
    if roce:  # ECN marks and the CNPs answering them: a few normally, many when congested
        marked = int(rx_packets * (1e-2 if saturated else 1e-4 * u_rx**3))
        hw["np_ecn_marked_roce_packets"] += marked
        hw["np_cnp_sent"] += marked
        hw["rp_cnp_handled"] += int(tx_packets * (1e-2 if saturated else 1e-4 * u_tx**3))


def accrue(st: dict, name: str, per_second: float, dt: float) -> None:
    """Add a steady rate to a counter, carrying the fraction so 50/h over 10 s steps adds up exactly."""
    total = st["carry"].get(name, 0.0) + per_second * dt
    whole = int(total + 1e-9)  # 0.1 added ten times is 0.9999999999999999
    st["carry"][name] = total - whole
    st["c"][name] += whole
