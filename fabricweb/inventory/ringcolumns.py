"""How a Port holds its `recent` ring in memory when it can: as columns (`Ring`).

The ring's entries and the rules that keep it are telemetry/storage/ring.py's. A ring in time
order (float times strictly ascending, float intervals, dicts of deltas) is held as three arrays,
its times, intervals and waits (24 B an entry), and the deltas of the few entries that are more
than a wait, by their time. An hour into a busy fabric ~110 entries a port held as Python lists
and dicts took ~35 kB, and walking them at every poll missed the caches (BENCHMARKS.md). A Ring
reads as the list of entries it holds (indexing, slicing, iterating and == give `[ts, interval,
deltas]` lists), so readers need not know which they have; any other ring stays a list. In the
readings row (readings.py) a Ring is written as its columns.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator
from itertools import pairwise

from collectors.facts import XMIT_WAIT

WAIT_MAX = (1 << 63) - 1  # the most one entry counts (the waits are 64-bit)
OTHER = -1  # the wait of an entry whose deltas are more than a wait: they are in `others`


def wait_of(deltas: dict) -> int:
    """The wait column's value for an entry with these deltas: the count when it is all they hold (0: nothing
    moved), else OTHER."""
    if not deltas:
        return 0
    if len(deltas) == 1:
        count = deltas.get(XMIT_WAIT)
        if type(count) is int and 0 < count <= WAIT_MAX:
            return count
    return OTHER


def plain(interval: object, deltas: object) -> bool:
    """An interval and deltas a Ring holds as they are."""
    return type(interval) is float and type(deltas) is dict


class Ring:
    """Entries `[ts, interval, deltas]`, float times strictly ascending, float intervals: `waits[k]` is
    port_xmit_wait's count when that is all the entry's deltas hold (0: nothing moved), else OTHER and its deltas
    are `others[ts]`. Reads as the list of its entries; an entry read is a new list, and a wait's deltas a new
    dict. Whoever changes the columns keeps those rules (ring.py makes a new Ring for each poll)."""

    __slots__ = ("intervals", "others", "times", "waits")

    def __init__(self) -> None:
        self.times = array("d")
        self.intervals = array("d")
        self.waits = array("q")
        self.others: dict[float, dict] | None = None

    @classmethod
    def of(cls, entries: Iterable) -> Ring | None:
        """These entries as a Ring; None when they are not `[float, float, dict]` lists in ascending time."""
        ring, last = cls(), -math.inf
        for entry in entries:
            if type(entry) is not list or len(entry) != 3:
                return None
            ts, interval, deltas = entry
            if type(ts) is not float or not ts > last or not plain(interval, deltas):
                return None
            ring.add(ts, interval, deltas)
            last = ts
        return ring

    @classmethod
    def from_columns(cls, document: dict) -> Ring:
        """The Ring `columns()` wrote; ValueError, saying why, when the columns do not make one."""
        ring = cls()
        try:
            ring.times, ring.intervals = array("d", document["t"]), array("d", document["i"])
            ring.waits = array("q", document["w"])
            others = {float(ts): deltas for ts, deltas in document["x"]}
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"a ring's columns are not numbers in arrays t, i, w and pairs in x: {e!r}") from None
        times = ring.times
        if not len(times) == len(ring.intervals) == len(ring.waits):
            raise ValueError("a ring's columns differ in length")
        if any(not later > earlier for earlier, later in pairwise(times)):
            raise ValueError("a ring's times are not in ascending order")
        if {times[k] for k, wait in enumerate(ring.waits) if wait == OTHER} != others.keys() or any(
            type(deltas) is not dict for deltas in others.values()
        ):
            raise ValueError("a ring's other deltas are not one an entry whose wait says so")
        ring.others = others or None
        return ring

    def columns(self) -> dict:
        """As JSON-ready columns: {"t": times, "i": intervals, "w": waits, "x": [[ts, deltas], ...]}."""
        others = [[ts, deltas] for ts, deltas in self.others.items()] if self.others else []
        return {"t": self.times.tolist(), "i": self.intervals.tolist(), "w": self.waits.tolist(), "x": others}

    def add(self, ts: float, interval: float, deltas: dict) -> None:
        """Append an entry (a float ts after the last, `plain` interval and deltas: the caller checked)."""
        wait = wait_of(deltas)
        self.times.append(ts)
        self.intervals.append(interval)
        self.waits.append(wait)
        if wait == OTHER:
            if self.others is None:
                self.others = {}
            self.others[ts] = deltas

    def _entry(self, k: int) -> list:
        ts, wait = self.times[k], self.waits[k]
        deltas = self.others[ts] if wait == OTHER else ({XMIT_WAIT: wait} if wait else {})
        return [ts, self.intervals[k], deltas]

    def __len__(self) -> int:
        return len(self.times)

    def __getitem__(self, k: int | slice) -> list:
        if type(k) is slice:
            return [self._entry(i) for i in range(*k.indices(len(self.times)))]
        return self._entry(k)

    def __iter__(self) -> Iterator[list]:
        others = self.others
        for ts, interval, wait in zip(self.times, self.intervals, self.waits, strict=True):
            yield [ts, interval, others[ts] if wait == OTHER else ({XMIT_WAIT: wait} if wait else {})]

    def __eq__(self, other: object) -> bool:
        if type(other) in (Ring, list, tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Ring({list(self)!r})"
