"""A simulated RoCE port's lossless Ethernet: PFC pause, the pause-storm watchdog, ECN/CNP, and the faults
that break it (`pause-storm`, `cnp-storm`).

A RoCE port keeps the netdev's ethtool statistics in its state (`eth`, the names of collectors/roce.py)
beside its hw_counters, and the tree holds them as `ethtool -S <if>` prints them (device/net/<if>/ethtool-S,
what the reader takes in place of the kernel's SIOCETHTOOL outside this machine's /sys). RoCE runs on
priority 3, as NVIDIA's RoCE configuration guides set it up.

Normally a port pauses and is paused a little (under 0.2% of the time) and marks a trickle of ECN
(traffic.add_traffic). Faults:
- `pause-storm`: the host stops draining its receive queue: the port sends PFC pause on priority 3 for most
  of each step, its watchdog raises a warning and an error event each step (stalled past the watermark,
  then past the timeout: pause sending stops) and frames drop on arrival while pause is off;
- `cnp-storm`: ECN marks pour in on priority 3's traffic and the port sends and handles CNPs at ~150,000/s.
"""

from __future__ import annotations

from .. import roce
from .layout import Layout

ROCE_FAULTS = frozenset({"pause-storm", "cnp-storm"})
PRIO = 3
_US = 1e6
# Share of time paused in each direction on a healthy port, at most (jitter up to twice the mean).
NORMAL_PAUSED = {"rx": 0.001, "tx": 0.0003}
PAUSE_US = 50.0  # µs one pause frame holds a healthy link (XOFF refreshed until the buffer drains)
STORM_PAUSED = 0.8  # of each step, pausing the switch while the host does not drain
STORM_PAUSE_US = 335.0  # a full 65,535-quanta pause at 100 Gb/s, refreshed back to back
STORM_DROPS_PER_S = 20_000.0  # arriving while pause sending is off
CNP_STORM_PER_S = {roce.ECN_MARKED: 200_000.0, roce.CNP_SENT: 200_000.0, roce.CNP_HANDLED: 150_000.0}
# Other statistics a ConnectX-6 Dx prints around ours (tests/fixtures/ethtool/ holds a whole recording).
_AROUND = ("rx_packets_phy", "tx_packets_phy", "rx_bytes_phy", "tx_bytes_phy", "rx_out_of_buffer")


def new_counters() -> dict[str, int]:
    return dict.fromkeys(roce.ETHTOOL_NAMES, 0)


def step(st: dict, faults: frozenset[str], dt: float, jitter: float) -> None:
    """Add `dt` seconds of lossless-Ethernet counts to a RoCE port's state (`jitter` in 0-1, per step)."""
    eth = st.setdefault("eth", new_counters())  # (a state written before RoCE ports had them)
    for d, share in NORMAL_PAUSED.items():
        paused = share * 2 * jitter * dt * _US
        _add(eth, roce.pause_duration(d, PRIO), paused)
        _add(eth, roce.pause(d, PRIO), paused / PAUSE_US)
    if "pause-storm" in faults:
        paused = STORM_PAUSED * dt * _US
        _add(eth, roce.pause_duration("tx", PRIO), paused)
        _add(eth, roce.pause("tx", PRIO), paused / STORM_PAUSE_US)
        _add(eth, roce.STORM_WARNING, 1)
        _add(eth, roce.STORM_ERROR, 1)
        _add(eth, roce.RX_DISCARDS_PHY, STORM_DROPS_PER_S * dt)
    if "cnp-storm" in faults and st["hw"]:
        for name, per_s in CNP_STORM_PER_S.items():
            st["hw"][name] += int(per_s * dt)


def _add(eth: dict[str, int], name: str, amount: float) -> None:
    eth[name] = eth.get(name, 0) + int(amount)


def ethtool_text(st: dict) -> str:
    """The port's statistics as `ethtool -S` prints them."""
    eth = st.get("eth") or new_counters()
    c = st["c"]
    around = (c["port_rcv_packets"], c["port_xmit_packets"], c["port_rcv_data"] * 4, c["port_xmit_data"] * 4, 0)
    lines = ["NIC statistics:"]
    lines += [f"     {name}: {value}" for name, value in zip(_AROUND, around, strict=True)]
    lines += [f"     {name}: {eth.get(name, 0)}" for name in roce.ETHTOOL_NAMES]
    return "\n".join(lines) + "\n"


def check_roce(spec: str, target: str, layout: Layout) -> str | None:
    """Why a RoCE fault cannot go on `target` (a node, device or port), or None: it needs a RoCE port there."""
    if any(port.key.startswith(target + "/") or port.key == target for _, dev, port in _roce_ports(layout)):
        return None
    return f"{spec}: {target} has no RoCE (Ethernet) port; lossless Ethernet faults go on a RoCE node's ports"


def _roce_ports(layout: Layout):
    return ((n, dev, port) for n, dev, port in layout.ports() if dev.model.link_layer == "Ethernet")
