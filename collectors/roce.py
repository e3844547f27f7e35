"""A RoCE port's lossless-Ethernet counters: the names (their one home), what they mean, and reading them.

Lossless Ethernet fails in two ways the InfiniBand counters do not show: PFC pause storms (a receiver that
stops draining XOFFs its link partner, and the pause spreads upstream) and ECN/CNP storms (DCQCN's
congestion notifications). mlx5 keeps them in two places:

- the RDMA device's `ports/<n>/hw_counters/` (mlx5_ib): CNPs sent (`np_cnp_sent`, this host as receiver
  saw ECN-marked packets, `np_ecn_marked_roce_packets`, and told their senders to slow down) and handled
  (`rp_cnp_handled`, this host as sender was told to), and the transport's loss signs (`out_of_sequence`,
  `packet_seq_err`, `local_ack_timeout_err`);
- the netdev's ethtool statistics (mlx5e, collectors/ethtool.py): PFC pause frames and pause duration
  (µs) per priority, both directions (`rx_prio3_pause`: pause received, the switch told this port to stop
  sending; `tx_prio3_pause`: sent, this port told the switch to stop), the pause-storm watchdog's events
  (`tx_pause_storm_warning_events`: the port was stalled past a watermark; `..._error_events`: past the
  timeout, and the NIC stopped sending pause, so frames may drop) and `rx_discards_phy` (frames dropped
  on arrival for lack of receive buffer), and the link-wide pause frames of IEEE 802.3's MAC control
  (`rx_pause_ctrl_phy`, `tx_pause_ctrl_phy`).

Through the kernel, the link-wide pause frames are asked of ethtool's netlink first (collectors/ethnl.py,
ETHTOOL_MSG_PAUSE_GET): the standard's counters under the standard's names, the same for every driver that
keeps them. Netlink carries nothing per priority, so PFC pause, its durations, the storm events and
`rx_discards_phy` come from the driver's own statistics (SIOCETHTOOL, collectors/ethtool.py), which are also
where the link-wide pair is taken from when netlink has none (a kernel before 5.10, a driver without pause
statistics).

Meanings: yuuki/rdma_exporter's README ("PFC direction", "Netdev hardware counters") and the mlx5e commits
that added the counters (docs/health.md, "Lossless Ethernet"). On the wire an ethtool statistic travels
beside the hw_counters files as `ethtool.<name>` (docs/pipeline.md).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from . import ethnl, ethtool
from .facts import is_ethernet
from .model import ReadError, src

PRIORITIES = range(8)  # IEEE 802.1p priorities; RoCE usually runs on 3
DIRECTIONS = ("rx", "tx")  # rx: pause received (the network pushes back); tx: pause sent (this host does)
STORM_WARNING = "tx_pause_storm_warning_events"
STORM_ERROR = "tx_pause_storm_error_events"
RX_DISCARDS_PHY = "rx_discards_phy"
# Link-wide (IEEE 802.3) pause frames, by mlx5's names for them; netlink's ETHTOOL_A_PAUSE_STAT_*_FRAMES.
LINK_PAUSE = {"rx": "rx_pause_ctrl_phy", "tx": "tx_pause_ctrl_phy"}
# hw_counters/ files.
CNP_SENT = "np_cnp_sent"
CNP_HANDLED = "rp_cnp_handled"
ECN_MARKED = "np_ecn_marked_roce_packets"
OUT_OF_SEQUENCE = "out_of_sequence"
PACKET_SEQ_ERR = "packet_seq_err"
LOCAL_ACK_TIMEOUT = "local_ack_timeout_err"
HW_NAMES = (CNP_SENT, CNP_HANDLED, ECN_MARKED, OUT_OF_SEQUENCE, PACKET_SEQ_ERR, LOCAL_ACK_TIMEOUT)

PREFIX = "ethtool."  # an ethtool statistic's name beside the hw_counters files
RECORDED = "ethtool-S"  # in a tree that is not /sys: `ethtool -S <if>` as recorded, in device/net/<if>/


def pause(direction: str, prio: int) -> str:
    return f"{direction}_prio{prio}_pause"


def pause_duration(direction: str, prio: int) -> str:
    """Microseconds the port was paused (rx) or pausing its partner (tx) on the priority."""
    return f"{direction}_prio{prio}_pause_duration"


ETHTOOL_NAMES = (
    *(pause(d, p) for d in DIRECTIONS for p in PRIORITIES),
    *(pause_duration(d, p) for d in DIRECTIONS for p in PRIORITIES),
    STORM_WARNING,
    STORM_ERROR,
    RX_DISCARDS_PHY,
    *LINK_PAUSE.values(),
)
_WANTED = frozenset(ETHTOOL_NAMES)


def wire(name: str) -> str:
    """How an ethtool statistic is named on the wire and in storage: `ethtool.rx_prio3_pause`."""
    return PREFIX + name


# Every lossless counter by the name it travels under, beside the port's hw_counters files.
WIRE_NAMES = (*(wire(name) for name in ETHTOOL_NAMES), *HW_NAMES)
_EIGHT: tuple[int | None, ...] = (None,) * len(PRIORITIES)


@dataclass(slots=True)
class Lossless:
    """One RoCE port's lossless counters at one poll. None: unknown (not reported, or its read failed)."""

    netdev: str | None = field(default=None, metadata=src("device/net/<if>/dev_port, else gid_attrs/ndevs/0"))
    source: str | None = field(
        default=None, metadata=src("ethtool netlink PAUSE_GET and SIOCETHTOOL ETHTOOL_GSTATS, or `ethtool -S` recorded")
    )
    rx_pause: tuple[int | None, ...] = field(default=_EIGHT, metadata=src("ethtool: rx_prio<N>_pause"))
    tx_pause: tuple[int | None, ...] = field(default=_EIGHT, metadata=src("ethtool: tx_prio<N>_pause"))
    rx_pause_duration: tuple[int | None, ...] = field(
        default=_EIGHT, metadata=src("ethtool: rx_prio<N>_pause_duration (µs)")
    )
    tx_pause_duration: tuple[int | None, ...] = field(
        default=_EIGHT, metadata=src("ethtool: tx_prio<N>_pause_duration (µs)")
    )
    pause_storm_warnings: int | None = field(default=None, metadata=src(f"ethtool: {STORM_WARNING}"))
    pause_storm_errors: int | None = field(default=None, metadata=src(f"ethtool: {STORM_ERROR}"))
    rx_discards_phy: int | None = field(default=None, metadata=src(f"ethtool: {RX_DISCARDS_PHY}"))
    rx_link_pause: int | None = field(
        default=None, metadata=src(f"ethtool netlink: ETHTOOL_A_PAUSE_STAT_RX_FRAMES, else {LINK_PAUSE['rx']}")
    )
    tx_link_pause: int | None = field(
        default=None, metadata=src(f"ethtool netlink: ETHTOOL_A_PAUSE_STAT_TX_FRAMES, else {LINK_PAUSE['tx']}")
    )
    cnp_sent: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{CNP_SENT}"))
    cnp_handled: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{CNP_HANDLED}"))
    ecn_marked: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{ECN_MARKED}"))
    out_of_sequence: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{OUT_OF_SEQUENCE}"))
    packet_seq_err: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{PACKET_SEQ_ERR}"))
    local_ack_timeout_err: int | None = field(default=None, metadata=src(f"ports/<n>/hw_counters/{LOCAL_ACK_TIMEOUT}"))

    @classmethod
    def of(cls, stats: dict[str, int], hw: dict[str, int | None], netdev: str | None, source: str | None):
        """From ethtool statistics by name and hw_counters values by file name."""

        def eight(name) -> tuple[int | None, ...]:
            return tuple(stats.get(name(p)) for p in PRIORITIES)

        return cls(
            netdev=netdev,
            source=source,
            rx_pause=eight(lambda p: pause("rx", p)),
            tx_pause=eight(lambda p: pause("tx", p)),
            rx_pause_duration=eight(lambda p: pause_duration("rx", p)),
            tx_pause_duration=eight(lambda p: pause_duration("tx", p)),
            pause_storm_warnings=stats.get(STORM_WARNING),
            pause_storm_errors=stats.get(STORM_ERROR),
            rx_discards_phy=stats.get(RX_DISCARDS_PHY),
            rx_link_pause=stats.get(LINK_PAUSE["rx"]),
            tx_link_pause=stats.get(LINK_PAUSE["tx"]),
            **{attr: hw.get(name) for attr, name in _HW_FIELDS},
        )

    def counters(self) -> dict[str, int | None]:
        """Every value by the name it travels under (hw_counters file names, `ethtool.<name>`)."""
        out: dict[str, int | None] = {}
        for d in DIRECTIONS:
            for p, value in zip(PRIORITIES, getattr(self, f"{d}_pause"), strict=True):
                out[wire(pause(d, p))] = value
        for d in DIRECTIONS:
            for p, value in zip(PRIORITIES, getattr(self, f"{d}_pause_duration"), strict=True):
                out[wire(pause_duration(d, p))] = value
        out[wire(STORM_WARNING)] = self.pause_storm_warnings
        out[wire(STORM_ERROR)] = self.pause_storm_errors
        out[wire(RX_DISCARDS_PHY)] = self.rx_discards_phy
        out[wire(LINK_PAUSE["rx"])] = self.rx_link_pause
        out[wire(LINK_PAUSE["tx"])] = self.tx_link_pause
        for attr, name in _HW_FIELDS:
            out[name] = getattr(self, attr)
        return out


# Lossless's fields from hw_counters/ and their files, in HW_NAMES' order.
_HW_FIELDS = (
    ("cnp_sent", CNP_SENT),
    ("cnp_handled", CNP_HANDLED),
    ("ecn_marked", ECN_MARKED),
    ("out_of_sequence", OUT_OF_SEQUENCE),
    ("packet_seq_err", PACKET_SEQ_ERR),
    ("local_ack_timeout_err", LOCAL_ACK_TIMEOUT),
)


def read_ports(reader, devices, kernel: bool) -> None:
    """Set `lossless` on every RoCE port of `devices`, read through `reader` (a sysfs.SysfsReader, whose
    `errors` take each failure). `kernel`: ask the kernel (this machine's /sys); else read the recording."""
    call = ethtool.Kernel() if kernel else None
    netlink = ethnl.Netlink() if kernel else None
    try:
        for dev in devices:
            dev_dir = os.path.join(reader.class_dir, dev.name)
            for port in dev.ports:
                if is_ethernet(port.link_layer):
                    port.lossless = _read_port(reader, dev_dir, port, call, netlink)
    finally:
        for held in (call, netlink):
            if held is not None:
                held.close()


def _read_port(reader, dev_dir: str, port, call: ethtool.Kernel | None, netlink: ethnl.Netlink | None) -> Lossless:
    port_dir = os.path.join(dev_dir, "ports", str(port.number))
    hw = {}
    for name in HW_NAMES:  # read every poll, though the rest of hw_counters/ may be read less often
        have = name in port.hw_counters
        hw[name] = port.hw_counters[name] if have else _count(reader, os.path.join(port_dir, "hw_counters", name))
    netdev = port.netdevs[0] if port.netdevs else reader.raw(os.path.join(port_dir, "gid_attrs", "ndevs", "0"))
    if netdev is None:
        if call is not None:  # (a recorded tree may leave the interfaces out)
            reader.errors.append(ReadError(os.path.join(dev_dir, "device", "net"), "no network interface found"))
        return Lossless.of({}, hw, None, None)
    if call is not None:
        source, where = "SIOCETHTOOL ETHTOOL_GSTATS", f"/sys/class/net/{netdev} (SIOCETHTOOL)"
        try:
            stats = ethtool.read_stats(netdev, _WANTED, call.call)
        except ethtool.EthtoolError as e:
            reader.errors.append(ReadError(where, f"ethtool statistics: {e}"))
            stats = {}
            if e.code == errno.ENODEV:  # no such interface: said once, netlink would say it again
                return Lossless.of(stats, hw, netdev, source)
        if netlink is not None and _link_pause(reader, netdev, netlink, stats):
            source = "ethtool netlink PAUSE_GET, SIOCETHTOOL ETHTOOL_GSTATS"
    else:
        where = os.path.join(dev_dir, "device", "net", netdev, RECORDED)
        source = f"`ethtool -S {netdev}` recorded ({RECORDED})"
        text = _recording(reader, where)
        try:
            stats = ethtool.parse_recorded(text, _WANTED) if text is not None else {}
        except ethtool.EthtoolError as e:
            reader.errors.append(ReadError(where, str(e)))
            stats = {}
    return Lossless.of(stats, hw, netdev, source)


def _link_pause(reader, netdev: str, netlink: ethnl.Netlink, stats: dict[str, int]) -> bool:
    """Put netlink's link-wide pause frames into `stats` over the driver's; whether netlink had any. A reply
    that does not parse is an error of its own and costs these two values only (the driver's, if any, stay)."""
    try:
        pause = netlink.pause_stats(netdev)
    except ethtool.EthtoolError as e:
        reader.errors.append(ReadError(f"/sys/class/net/{netdev} (ethtool netlink)", f"pause statistics: {e}"))
        return False
    if pause is None:
        return False
    got = {LINK_PAUSE["rx"]: pause.rx_frames, LINK_PAUSE["tx"]: pause.tx_frames}
    stats.update({name: value for name, value in got.items() if value is not None})
    return any(value is not None for value in got.values())


def _count(reader, path: str) -> int | None:
    text = reader.raw(path)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()):
        reader.errors.append(ReadError(path, f"not a decimal number: {text[:40]!r}"))
        return None
    return int(text)


def _recording(reader, path: str) -> str | None:
    """A recorded `ethtool -S`: longer than the 4 KiB a sysfs file is read to, so read whole here."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(1 << 20)
    except FileNotFoundError:  # a copied tree without one: the statistics are unknown, nothing failed
        pass
    except OSError as e:
        reader.errors.append(ReadError(path, e.strerror or type(e).__name__))
    return None
