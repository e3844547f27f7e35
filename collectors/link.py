"""InfiniBand link speeds and widths: the tables, the `rate` parser, and link judgement.

Numbers follow the kernel's sysfs `rate` file (per-lane Gb/s × lanes) and
iblinkinfo's signalling rates. See docs/infiniband.md §2.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Speed:
    name: str
    lane_gbps: float  # per-lane Gb/s as the kernel prints it in `rate`
    signalling_gbps: float  # per-lane signalling rate, as iblinkinfo prints it
    verbs_id: int  # ibv_port_attr.active_speed / active_speed_ex value


# Ordered slowest to fastest; the order is what "below expected" means.
# FDR10 and QDR print the same 10 Gb/s, but FDR10 signals faster (64b/66b).
SPEEDS: tuple[Speed, ...] = (
    Speed("SDR", 2.5, 2.5, 1),
    Speed("DDR", 5.0, 5.0, 2),
    Speed("QDR", 10.0, 10.0, 4),
    Speed("FDR10", 10.0, 10.3125, 8),
    Speed("FDR", 14.0, 14.0625, 16),
    Speed("EDR", 25.0, 25.78125, 32),
    Speed("HDR", 50.0, 53.125, 64),
    Speed("NDR", 100.0, 106.25, 128),
    Speed("XDR", 200.0, 212.5, 256),
)
SPEED_BY_NAME = {s.name: s for s in SPEEDS}
SPEED_RANK = {s.name: i for i, s in enumerate(SPEEDS)}
SPEED_BY_VERBS_ID = {s.verbs_id: s for s in SPEEDS}

WIDTHS: tuple[int, ...] = (1, 2, 4, 8, 12)
# ibv_port_attr.active_width is a bitmask, not a lane count.
WIDTH_BY_VERBS_BIT = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}


def format_gbps(gbps: float) -> str:
    """Total Gb/s as the kernel prints it: one decimal only when needed."""
    return f"{gbps:g}" if gbps != int(gbps) else str(int(gbps))


@dataclass(frozen=True, slots=True)
class Rate:
    """A parsed sysfs `rate` file.

    `gbps` is the total the kernel printed; `lanes` and `speed` are None when the
    file does not say (a port with no link prints `0 GB/sec`).
    """

    gbps: float
    lanes: int | None
    speed: str | None

    @property
    def bytes_per_second(self) -> float:
        return self.gbps * 1e9 / 8

    @property
    def link_name(self) -> str | None:
        """`4X EDR`, as ibstat and iblinkinfo name a link."""
        if self.lanes is None or self.speed is None:
            return None
        return f"{self.lanes}X {self.speed}"

    def describe(self, ethernet: bool = False) -> str:
        """`100 Gb/s (4X EDR)`, the form operators read in findings; `100GbE` on an Ethernet port."""
        if ethernet:
            return ethernet_name(self.gbps) or f"{format_gbps(self.gbps)} Gb/s"
        name = self.link_name
        total = format_gbps(self.gbps)
        return f"{total} Gb/s ({name})" if name else f"{total} Gb/s"

    def named(self, ethernet: bool = False) -> str | None:
        """`4X EDR`, or on an Ethernet port `100GbE`."""
        return ethernet_name(self.gbps) if ethernet else self.link_name


def ethernet_name(gbps: float | None) -> str | None:
    """An Ethernet link by its total, as ethtool and switches name it: `100GbE`. mlx5 reports a RoCE port's
    link in InfiniBand terms (`100 Gb/sec (4X EDR)`), words an Ethernet operator does not use."""
    return f"{format_gbps(gbps)}GbE" if gbps else None


class RateError(ValueError):
    """A `rate` file that does not follow `"%d%s Gb/sec (%dX%s)"`."""


# re.ASCII: the kernel prints ASCII digits; \d would also take any Unicode digit.
_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?) (?:Gb|GB)/sec(?: \((\d+)X ?([A-Za-z0-9]*)\))?$", re.ASCII)


def parse_rate(text: str) -> Rate:
    """Parse the sysfs `rate` file.

    Accepts `100 Gb/sec (4X EDR)`, the old nameless SDR form `10 Gb/sec (4X)`,
    and `0 GB/sec` (no link). Raises RateError on anything else, naming what is off.
    """
    text = text.strip()
    m = _RATE_RE.match(text)
    if m is None:
        raise RateError(f"unrecognised rate {text[:60]!r}")
    gbps = float(m.group(1))
    lanes_text, speed_name = m.group(2), m.group(3)
    if lanes_text is None:
        if gbps != 0:
            raise RateError(f"rate {text!r} gives no width")
        return Rate(0.0, None, None)
    lanes = int(lanes_text)
    if lanes not in WIDTHS:
        raise RateError(f"rate {text!r}: {lanes}X is not an InfiniBand width")
    if not speed_name:
        # Kernels before 4.x printed SDR without a name.
        speed_name = "SDR"
    speed = SPEED_BY_NAME.get(speed_name.upper())
    if speed is None:
        raise RateError(f"rate {text!r}: unknown speed {speed_name!r}")
    if abs(speed.lane_gbps * lanes - gbps) > 0.05:
        raise RateError(
            f"rate {text!r}: {lanes}X {speed.name} is {format_gbps(speed.lane_gbps * lanes)} Gb/s, "
            f"not {format_gbps(gbps)}"
        )
    return Rate(gbps, lanes, speed.name)


def make_rate(speed: str, lanes: int) -> Rate:
    """The Rate the kernel would print for `lanes`X `speed`."""
    return Rate(SPEED_BY_NAME[speed].lane_gbps * lanes, lanes, speed)


@dataclass(frozen=True, slots=True)
class LinkFinding:
    """What is wrong with a link compared with the one it should run at."""

    speed_downgrade: bool
    width_downgrade: bool
    message: str

    @property
    def kind(self) -> str:
        if self.speed_downgrade and self.width_downgrade:
            return "speed+width"
        return "speed" if self.speed_downgrade else "width"


def judge_link(actual: Rate, expected: Rate, ethernet: bool = False) -> LinkFinding | None:
    """Compare a port's link with the one it should run at.

    Speed and width are judged separately: `40 Gb/s (4X QDR)` and
    `40 Gb/s (4X FDR10)` have the same total but are different links.
    Returns None when the link is at or above the expectation in both, or when
    either side lacks speed or width (a port with no link is judged elsewhere).
    `ethernet`: said in Ethernet words, `100GbE trained at 40GbE`.
    """
    if None in (actual.speed, actual.lanes, expected.speed, expected.lanes):
        return None
    slow = SPEED_RANK[actual.speed] < SPEED_RANK[expected.speed]
    narrow = actual.lanes < expected.lanes
    if not (slow or narrow):
        return None
    if ethernet:
        return _ethernet_finding(actual, expected, slow, narrow)
    what = []
    if slow:
        what.append(f"{actual.speed} where {expected.speed} expected")
        if actual.gbps == expected.gbps and actual.speed in _8B10B and expected.speed not in _8B10B:
            # The one pair whose totals match (4X QDR and 4X FDR10 both print 40 Gb/s): say what is lost.
            data = actual.gbps * 0.8
            what[-1] += f", the same {_num(actual.gbps)} Gb/s total but 8b/10b encoding leaves {_num(data)} for data"
    if narrow:
        what.append(f"{actual.lanes}X where {expected.lanes}X expected")
    kind = "speed and width downgrade" if slow and narrow else ("speed downgrade" if slow else "width downgrade")
    message = f"trained at {actual.describe()}, expected {expected.describe()}: {kind} ({'; '.join(what)})"
    return LinkFinding(slow, narrow, message)


def _ethernet_finding(actual: Rate, expected: Rate, slow: bool, narrow: bool) -> LinkFinding:
    """`100GbE trained at 40GbE: speed downgrade (10 Gb/s lanes where 25 Gb/s expected)`: lanes and their rate."""
    what = []
    if slow:
        lane, wanted = SPEED_BY_NAME[actual.speed].lane_gbps, SPEED_BY_NAME[expected.speed].lane_gbps
        what.append(f"{_num(lane)} Gb/s lanes where {_num(wanted)} Gb/s expected")
    if narrow:
        what.append(f"{actual.lanes} lane{'s' if actual.lanes != 1 else ''} where {expected.lanes} expected")
    kind = "speed and width downgrade" if slow and narrow else ("speed downgrade" if slow else "width downgrade")
    message = f"{expected.describe(True)} trained at {actual.describe(True)}: {kind} ({'; '.join(what)})"
    return LinkFinding(slow, narrow, message)


_8B10B = frozenset({"SDR", "DDR", "QDR"})  # line encoding of these speeds; FDR10 and later use 64b/66b or better


def _num(x: float) -> str:
    return f"{x:g}"


def better_link(a: Rate | None, b: Rate | None) -> Rate | None:
    """The link with the faster speed and the wider width of the two (either may be None)."""
    if a is None or a.speed is None or a.lanes is None:
        return b if b is not None and b.speed is not None and b.lanes is not None else None
    if b is None or b.speed is None or b.lanes is None:
        return a
    speed = a.speed if SPEED_RANK[a.speed] >= SPEED_RANK[b.speed] else b.speed
    return make_rate(speed, max(a.lanes, b.lanes))


def best_common(
    speeds_a: Collection[str] | None,
    widths_a: Collection[int] | None,
    speeds_b: Collection[str] | None,
    widths_b: Collection[int] | None,
) -> Rate | None:
    """The fastest speed and the widest width both ends of a link support (iblinkinfo's "Could be"),
    or None when either end's sets are unknown or share nothing."""
    if not (speeds_a and widths_a and speeds_b and widths_b):
        return None
    speeds = [s for s in SPEED_RANK if s in speeds_a and s in speeds_b]
    widths = [w for w in WIDTHS if w in widths_a and w in widths_b]
    if not speeds or not widths:
        return None
    return make_rate(speeds[-1], widths[-1])
