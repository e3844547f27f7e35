"""Counter arithmetic: from two raw readings of a port to per-poll deltas. Pure functions.

PMA counters never wrap; they stop at all-ones for their width until someone resets
them (docs/infiniband.md §3). So:
- a decrease is a reset (reboot, driver reload, perfquery -R): the delta is the value
  counted since the reset, i.e. the current reading, never a negative or a modulo jump;
- a counter at all-ones now, or at the previous poll, gives no delta ("rate unknown")
  and a capped flag, so health can tell the operator to reset it or use 64-bit counters;
- a missed poll needs nothing special: the delta covers the real interval, and rates
  divide by that interval;
- an interval <= 0 (the node's clock stepped back) gives no delta: the new reading
  becomes the baseline;
- a reading missing on either side gives no delta;
- a delta larger than the fastest link there is (12X XDR, 300 GB/s) could carry in
  the interval (counted as at most a day) is implausible and gives no delta: a broken
  or hostile node cannot store a number that no link counts, nor one whose sums in
  the rollups overflow a 64-bit column (a 5-minute bucket then holds at most ~2.6e16).
Values are in base units as the snapshot carries them (data counters in bytes, ×4).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from operator import eq, itemgetter, sub

from collectors.counters import facts
from collectors.link import SPEEDS, WIDTHS

from .columns import DELTA_COLUMNS, SOURCES

# Why a delta is unknown.
MISSING = "missing"  # no reading now
NO_BASELINE = "no baseline"  # no reading at the previous poll (first poll, file unreadable then)
CLOCK = "clock went backwards"
CAPPED = "capped"
IMPLAUSIBLE = "implausible"  # more than any link could carry in the interval

MAX_DELTA = (1 << 63) - 1
# Bytes per second of the fastest link (every other counter counts fewer events than bytes on the wire).
PEAK_BYTES_PER_S = max(s.lane_gbps for s in SPEEDS) * max(WIDTHS) * 1e9 / 8
# Longer gaps are judged as a day: the bound must stay far below MAX_DELTA once summed in a rollup.
PLAUSIBLE_INTERVAL_CAP_S = 86_400.0


def plausible_max(interval: float | None) -> int:
    """The largest delta any counter can show over `interval` seconds (unknown interval: a day's worth)."""
    seconds = PLAUSIBLE_INTERVAL_CAP_S if interval is None else min(max(interval, 1.0), PLAUSIBLE_INTERVAL_CAP_S)
    return int(PEAK_BYTES_PER_S * seconds)


@dataclass(frozen=True, slots=True)
class Delta:
    value: int | None  # increase over the interval; None when unknown
    reset: bool = False  # the counter went down since the previous poll
    capped: bool = False  # the counter is (or was) at all-ones: rate unknown until reset
    unknown: str | None = None  # why value is None


@cache
def all_ones(name: str) -> int:
    """The base-unit value a counter shows when it has stopped at its PMA maximum."""
    ones, times = facts(name)
    return ones * times


def counter_delta(
    name: str,
    prev: int | None,
    cur: int | None,
    interval: float | None,
    *,
    prev_capped: bool = False,
    cur_capped: bool = False,
) -> Delta:
    """The increase of counter `name` from `prev` to `cur` over `interval` seconds.

    `prev_capped` / `cur_capped` are the snapshot's own capped flags; a value at
    all-ones for the counter's width counts as capped even without the flag.
    """
    if cur is None:
        return Delta(None, unknown=MISSING)
    cur_capped = cur_capped or cur == all_ones(name)
    if prev is None:
        return Delta(None, capped=cur_capped, unknown=NO_BASELINE)
    if interval is not None and interval <= 0:
        return Delta(None, capped=cur_capped, unknown=CLOCK)
    reset = cur < prev
    if cur_capped or prev_capped or prev == all_ones(name):
        return Delta(None, reset=reset, capped=True, unknown=CAPPED)
    value = cur if reset else cur - prev
    if value > plausible_max(interval):
        return Delta(None, reset=reset, unknown=IMPLAUSIBLE)
    return Delta(value, reset=reset)


def named_deltas(
    names: tuple[str, ...], prev: Mapping[str, int | None] | None, cur: Mapping[str, int | None], interval: float | None
) -> dict[str, int | None]:
    """Deltas of counters kept outside the sample columns, by name, for those of `names` that `cur` has (a RoCE
    port's lossless counters, which travel in hw_counters: collectors/roce.py); as counter_delta has them."""
    if prev is None:
        return {name: None for name in names if name in cur}
    return {name: counter_delta(name, prev.get(name), cur[name], interval).value for name in names if name in cur}


def rate(delta: int | None, interval: float | None) -> float | None:
    """Per-second rate of a delta, or None when either is unknown or the interval is not positive."""
    if delta is None or interval is None or interval <= 0:
        return None
    return delta / interval


@dataclass(slots=True)
class Reading:
    """One port's raw counters from one snapshot (base units)."""

    counters: Mapping[str, int | None]
    counters_ext: Mapping[str, int | None]
    capped: Collection[str] = ()

    def section(self, name: str) -> Mapping[str, int | None]:
        return self.counters_ext if name == "counters_ext" else self.counters


@dataclass(slots=True)
class PortDeltas:
    deltas: list[int | None]  # in DELTA_COLUMNS order; None when unknown
    resets: list[str] = field(default_factory=list)  # columns whose counter went down
    capped: list[str] = field(default_factory=list)  # columns whose rate is unknown because of a cap
    clock_backwards: bool = False

    @property
    def values(self) -> dict[str, int | None]:
        """Sample column -> delta."""
        return dict(zip(DELTA_COLUMNS, self.deltas, strict=True))


# Per column: (column, ((is_ext, counter file, its all-ones value), ...)), resolved once.
_PLAN = tuple(
    (column, tuple((section == "counters_ext", name, all_ones(name)) for section, name in sources))
    for column, sources in SOURCES.items()
)
# The common case in one go (see port_deltas): each column's file in counters/ (its last source), and
# for the traffic columns their 64-bit counters_ext/ files, with the all-ones value of each.
_PLAIN = tuple(sources[-1][1] for sources in SOURCES.values())
_TRAFFIC_EXT = tuple(name for sources in SOURCES.values() for section, name in sources if section == "counters_ext")
_PLAIN_REST = _PLAIN[len(_TRAFFIC_EXT) :]  # (columns.py lists the traffic columns first)
_ONES_PLAIN = tuple(map(all_ones, _PLAIN))
_ONES_EXT = (*map(all_ones, _TRAFFIC_EXT), *_ONES_PLAIN[len(_TRAFFIC_EXT) :])
# One C call per section; a file a reading lacks raises KeyError, which sends the port column by column.
_TAKE_PLAIN, _TAKE_EXT, _TAKE_REST = itemgetter(*_PLAIN), itemgetter(*_TRAFFIC_EXT), itemgetter(*_PLAIN_REST)


def port_deltas(prev: Reading | None, cur: Reading, interval: float | None) -> PortDeltas:
    """Deltas of every sample column between two readings of a port.

    A column is computed from the first source (section, file) that has a value in
    both readings, so a port never mixes its 64-bit and 32-bit copy of a counter.
    With no previous reading every delta is None (but a capped counter is still flagged).
    This runs for every port at every poll: the common case (every counter known in
    both readings from the same files, no cap, no reset, a positive interval) is done
    with a few passes of builtins over all columns at once; anything else goes column
    by column through the rules (`_by_column`, `counter_delta`).
    """
    if prev is not None and (interval is None or interval > 0) and not cur.capped and not prev.capped:
        cur_x, prev_x = cur.counters_ext, prev.counters_ext
        try:
            if not cur_x and not prev_x:
                now, before, ones = _TAKE_PLAIN(cur.counters), _TAKE_PLAIN(prev.counters), _ONES_PLAIN
            else:
                now = _TAKE_EXT(cur_x) + _TAKE_REST(cur.counters)
                before = _TAKE_EXT(prev_x) + _TAKE_REST(prev.counters)
                ones = _ONES_EXT
        except KeyError:  # a file missing from a reading
            return _by_column(prev, cur, interval)
        # (64-bit values in counters/, as mlx5 gives, run past the 32-bit all-ones: only equality caps.)
        if None not in now and None not in before and not any(map(eq, now, ones)) and not any(map(eq, before, ones)):
            deltas = list(map(sub, now, before))
            if min(deltas) >= 0 and max(deltas) <= plausible_max(interval):
                return PortDeltas(deltas)
    return _by_column(prev, cur, interval)


def _by_column(prev: Reading | None, cur: Reading, interval: float | None) -> PortDeltas:
    clock_ok = interval is None or interval > 0
    limit = plausible_max(interval)
    out = PortDeltas([], clock_backwards=prev is not None and not clock_ok)
    values = out.deltas
    cur_c, cur_x, cur_capped = cur.counters, cur.counters_ext, cur.capped
    if prev is None:
        prev_c = prev_x = {}
        prev_capped = ()
    else:
        prev_c, prev_x, prev_capped = prev.counters, prev.counters_ext, prev.capped
    for column, sources in _PLAN:
        chosen = None
        for is_ext, name, ones in sources:
            now = (cur_x if is_ext else cur_c).get(name)
            if now is None:
                continue
            before = (prev_x if is_ext else prev_c).get(name)
            if before is not None:
                chosen = (name, before, now, ones)
                break
            if chosen is None:
                chosen = (name, None, now, ones)
        if chosen is None:
            values.append(None)
            continue
        name, before, now, ones = chosen
        if (
            before is not None
            and clock_ok
            and before <= now
            and now != ones
            and before != ones
            and now - before <= limit
            and name not in cur_capped
            and name not in prev_capped
        ):
            values.append(now - before)
            continue
        delta = counter_delta(
            name, before, now, interval, prev_capped=name in prev_capped, cur_capped=name in cur_capped
        )
        values.append(delta.value)
        if delta.reset:
            out.resets.append(column)
        if delta.capped:
            out.capped.append(column)
    return out
