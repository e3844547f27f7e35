"""Running sums of one quiet port's port_xmit_wait, so the fast path need not walk its congestion window.

The congestion rule needs the waits summed over the last five minutes of the ring
(window.trailing: exact, but a loop over every poll in the window, ~30 of them on a
port that waits at every poll). Most ports are far below the threshold, and saying
so needs only bounds: the total is at most the sum of the counts of the window's
entries, the span at least that of its last few entries, whole inside it.

The sum comes from running totals kept here by poll time. Ingest only appends to a
ring, drops its oldest entries and merges neighbours into one entry with the later
time and the counts summed (telemetry/storage/ring.py), so the entries after a given one
hold exactly the polls logged after its time: their sum is a difference of two
running totals. A poll whose count is not a non-negative int or whose interval is
not a float of a millisecond or more counts as odd: a window holding one gets no
bounds (trailing then counts it exactly).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping

from collectors.facts import XMIT_WAIT as WAIT
from fabricweb.inventory.ringcolumns import Ring

TAIL = 4  # entries before this poll whose intervals make the span's lower bound
_SLACK = 1e-6  # relative: far above the rounding of trailing's sums for polls of a millisecond or more


def _odd(count: object, interval: object) -> bool:
    return type(count) is not int or count < 0 or type(interval) is not float or not interval >= 1e-3


class WaitLog:
    """Running (wait count, odd polls) by poll time, over a ring's polls since it was seeded."""

    __slots__ = ("_counts", "_odds", "_times")

    def __init__(self, ring: list) -> None:
        """Seeded with every entry of `ring` (in ascending order of float times: the caller checked)."""
        self._times = array("d")  # poll times (floats: the caller checked)
        self._counts: list[int] = []  # running totals, through each time (unbounded: Python ints)
        self._odds = array("q")
        for entry in ring:
            self.add(entry)

    def add(self, entry: list) -> None:
        """One more poll: the ring's entry for it, [ts, interval, deltas]."""
        ts, interval, deltas = entry
        count = deltas.get(WAIT, 0) if type(deltas) is dict else None
        total = self._counts[-1] if self._counts else 0
        odds = self._odds[-1] if self._odds else 0
        if _odd(count, interval):
            odds += 1
        else:
            total += count
        self._times.append(ts)
        self._counts.append(total)
        self._odds.append(odds)

    def _at(self, ts: float) -> int | None:
        i = bisect_left(self._times, ts)
        return i if i < len(self._times) and self._times[i] == ts else None

    def bounds(self, now: float, interval: float, deltas: Mapping, ring: list, length: float):
        """(at least, at most) for trailing's (total, span) over `length` s before `now`, or None.

        `ring` ends with this poll's entry (at `now`), not logged yet; the entry before it is
        the last poll logged. Totals older than the window's are dropped on the way.
        """
        w = float(length)
        oldest = now - w
        times = ring.times if type(ring) is Ring else [entry[0] for entry in ring]
        start = bisect_right(times, oldest)
        now_count = deltas.get(WAIT, 0)
        if type(now_count) is not int or now_count < 0 or len(times) < 2:
            return None
        last = len(self._times) - 1
        base = self._at(times[start - 1]) if start else None
        if last < 0 or self._times[last] != times[-2] or (start and base is None):
            return None  # not logged here
        if base:
            del self._times[:base], self._counts[:base], self._odds[:base]
            last, base = last - base, 0
        counts, odds = self._counts, self._odds
        total = counts[last] - (counts[base] if base is not None else 0)
        if odds[last] != (odds[base] if base is not None else 0):
            return None  # an odd poll in the window
        first = max(start + 1, len(times) - 1 - TAIL)  # the tail, whole inside the window: checked below
        if first < len(times) - 1:
            if type(ring) is Ring:
                intervals = ring.intervals[first:-1]  # (floats, as a Ring holds them)
            else:
                intervals = [entry[1] for entry in ring[first:-1]]
                if set(map(type, intervals)) != {float}:
                    return None
            if not times[first] - max(intervals) >= oldest + 1e-3:
                return None
            seconds = math.fsum(intervals)
        else:
            seconds = 0.0
        this = interval if type(interval) is float and 0.0 <= interval < math.inf else 0.0
        return (total + now_count) * (1 + _SLACK), (seconds + min(this, w)) * (1 - _SLACK)
