"""Counter deltas summed over the last minute, five minutes or hour of polls.

Counts are never extrapolated upwards: 3 symbol errors in the first 10 s of
history are 3 in the last hour, not 1080/h. A poll that reaches back past the
start of the window (a long poll after a gap) counts only for its share inside
the window, assuming its events were spread evenly over it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter

from .view import PortView

HOUR_S = 3600.0
MINUTE_S = 60.0


def known_delta(value: object) -> int | None:
    """A usable delta, or None: unknown, negative (a reset not caught upstream) or not a number."""
    if type(value) is int:  # the common case, checked first: this runs for every counter of every poll
        return value if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _seconds(value: object) -> float:
    if type(value) is float and 0.0 <= value < math.inf:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0.0
    return float(value)


def _inside(age: float, seconds: float, window: float) -> tuple[float, float]:
    """(seconds of a poll inside the window, the share of its events counted) for a poll ending `age` s ago.

    A poll whole inside counts exactly once: (age + seconds) - age can come out a hair above
    `seconds`, and one link down counted as 1.0000000000000002 is over a threshold of 1.
    """
    if age + seconds <= window:
        return seconds, 1.0
    inside = window - age
    return inside, (inside / seconds if seconds > 0 else 1.0)


@dataclass(frozen=True, slots=True)
class Count:
    total: float  # events in the window
    span_s: float  # seconds of the window covered by polls in which the counter was known


class Windows:
    """Sums of each counter over trailing windows ending at this poll (this poll included)."""

    def __init__(self, view: PortView, lengths: Iterable[float], counters: Collection[str] | None = None) -> None:
        """`counters`: sum only these (the sums of each are the same either way); None: all."""
        self._only = None if counters is None else tuple(counters)
        # Longest first, so a poll too old for one window skips the shorter ones too.
        self._lengths = sorted({float(x) for x in lengths}, reverse=True)
        self._totals: dict[float, dict[str, float]] = {w: defaultdict(float) for w in self._lengths}
        self._spans: dict[float, float] = dict.fromkeys(self._lengths, 0.0)
        self._unknown: dict[float, dict[str, float]] = {w: defaultdict(float) for w in self._lengths}
        now = _seconds(view.ts)
        self._add(0.0, view.interval_s, view.deltas)
        if not self._lengths:
            return
        longest = self._lengths[0]
        shorter = self._lengths[1] if len(self._lengths) > 1 else 0.0
        oldest = now - longest
        spans, totals, unknown = self._spans, self._totals[longest], self._unknown[longest]
        for poll in view.recent:
            try:
                ts, interval, deltas = poll
            except (TypeError, ValueError):
                continue
            if type(ts) is not float or not 0.0 <= ts < math.inf:  # _seconds, inlined for speed
                ts = _seconds(ts)
            if not (oldest < ts < now) or (type(deltas) is not dict and not isinstance(deltas, Mapping)):
                continue  # (the ABC check is slow: plain dicts, the stored form, skip it)
            age = now - ts
            seconds = interval if type(interval) is float and 0.0 <= interval < math.inf else _seconds(interval)
            end = age + seconds
            if age < shorter or end > longest or seconds <= 0:
                self._add(age, interval, deltas)
                continue
            # Most of an hour's polls lie whole in the longest window and in no other: summed
            # inline, as _add sums a whole poll, since a port runs this for every poll.
            spans[longest] += seconds
            for name, value in self._items(deltas):
                d = value if type(value) is int and value >= 0 else known_delta(value)
                if d is None:
                    unknown[name] += seconds
                elif d:
                    totals[name] += d

    def _add(self, age: float, interval: object, deltas: Mapping[str, object]) -> None:
        seconds = _seconds(interval)
        for w in self._lengths:
            if age >= w:
                break
            inside, share = _inside(age, seconds, w)
            self._spans[w] += inside
            totals, unknown = self._totals[w], self._unknown[w]
            for name, value in self._items(deltas):
                d = value if type(value) is int and value >= 0 else known_delta(value)
                if d is None:
                    unknown[name] += inside
                elif d:
                    totals[name] += d * share

    def _items(self, deltas: Mapping[str, object]) -> Iterable[tuple[str, object]]:
        if self._only is None:
            return deltas.items()
        return [(name, deltas[name]) for name in self._only if name in deltas]

    def count(self, name: str, seconds: float) -> Count:
        w = float(seconds)
        if w not in self._spans:
            raise KeyError(f"no {seconds} s window was summed")
        if self._only is not None and name not in self._only:
            raise KeyError(f"{name} was not summed")
        return Count(self._totals[w].get(name, 0.0), max(self._spans[w] - self._unknown[w].get(name, 0.0), 0.0))


_TS = itemgetter(0)


def trailing(now: float, interval: object, deltas: Mapping[str, object], recent, counter: str, length: float) -> Count:
    """Windows(view, (length,), (counter,)).count(counter, length) for a view with this ts (`now`),
    interval_s, deltas and `recent`, visiting only the polls inside the window.

    Only for a ring in ascending order of ts (what ingest writes; the engine checks it
    before calling this): a bisection skips what lies before the window. The sums run
    in Windows' order with its arithmetic, so the floats are the same.
    """
    w = float(length)
    now = _seconds(now)
    oldest = now - w
    total = unknown = 0.0
    # This poll first, as Windows._add(0.0, ...) adds it.
    seconds = _seconds(interval)
    span, share = _inside(0.0, seconds, w)
    if counter in deltas:
        counted, missed = _tally(deltas[counter], span, share)
        total, unknown = total + counted, unknown + missed
    start = bisect_right(recent, oldest, key=_TS)
    for poll in recent[start:] if start else recent:
        try:
            ts, interval, moved = poll
        except (TypeError, ValueError):
            continue
        if type(ts) is not float or not 0.0 <= ts < math.inf:
            ts = _seconds(ts)
        if not (oldest < ts < now) or (type(moved) is not dict and not isinstance(moved, Mapping)):
            continue
        age = now - ts
        seconds = interval if type(interval) is float and 0.0 <= interval < math.inf else _seconds(interval)
        if age >= w:
            continue
        inside, share = _inside(age, seconds, w)
        span += inside
        if counter in moved:
            counted, missed = _tally(moved[counter], inside, share)
            total, unknown = total + counted, unknown + missed
    return Count(total, max(span - unknown, 0.0))


def _tally(value: object, inside: float, share: float) -> tuple[float, float]:
    """(events counted, seconds unknown) of one poll's delta, as Windows._add counts it."""
    d = value if type(value) is int and value >= 0 else known_delta(value)
    if d is None:
        return 0.0, inside
    return (d * share if d else 0.0), 0.0
