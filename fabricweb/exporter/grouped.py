"""Families built a row at a time from groups memoised across scrapes: the health series.

A port's health series (state, link, expectation, capped counters) and a device's (info,
PCIe link) are a pure function of a handful of the row's values, which change rarely, unlike
its counters. `Grouped` keeps each row's samples keyed by exactly those values (a tuple: a
row whose link, expectation or name changed has another key, so nothing served can be
stale) and hands the families to the encoder as KeyedFamily, whose rendered lines the
encoder keeps by the key's serial number (encoder.py): a number given to one key only, for
the life of the process, and an int hashes for free where a tuple of 17 values is hashed
again at every lookup. Per scrape and row what is left is building the key and one lookup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import count
from typing import NamedTuple

from .series import Families, KeyedFamily, Samples

# Rows kept per kind of row (ports, devices): 50,000 ports fit; past it the memo starts afresh.
MAX_MEMO_ROWS = 200_000

Spec = tuple[str, str, str | None]  # help, type, extra label
Entry = tuple[int, tuple[tuple[str, int], ...], dict[str, str]]  # serial, shape, labels
_serials = count()  # one sequence for every Memo: a serial names one key of one kind of row, for good


class Part(NamedTuple):
    """Rows of a Grouped as it holds them: serials, keys, contexts and shape ids in order, and the shapes."""

    serials: list[int]
    keys: list[tuple]
    contexts: list[tuple]
    shapes: list[int]
    seen: dict[int, tuple]


class Memo:
    """Row key -> its serial, the shape of its samples (family name and count, in order) and its labels.

    Not the samples themselves (a list, tuple and float each: 34 MB at 20,000 ports): the
    encoder needs them only for a row whose lines it has not kept, and they are built again
    then (build is pure; _Groups)."""

    def __init__(self, build: Callable[[tuple, tuple], tuple[Samples, dict[str, str]]]) -> None:
        self.build = build
        self.entries: dict[tuple, Entry] = {}
        self.shapes: dict[tuple, tuple] = {}  # one object per shape: compared by identity first

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: tuple, context: tuple = ()) -> tuple[Entry, Samples | None]:
        """The entry of `key`, built from `key` and `context` (what the key names by a serial)
        if new, and then its samples too."""
        entry = self.entries.get(key)
        if entry is not None:
            return entry, None
        samples, labels = self.build(key, context)
        shape = tuple((name, len(rows)) for name, rows in samples.items())
        shape = self.shapes.setdefault(shape, shape)
        if len(self.entries) >= MAX_MEMO_ROWS:
            self.entries.clear()
        entry = self.entries[key] = (next(_serials), shape, labels)
        return entry, samples


class _Groups(dict):
    """Serial -> the samples of its row for one scrape, built again from the row's key when
    the encoder asks for a row the memo did not build in this scrape."""

    def __init__(self, build: Callable[[tuple, tuple], tuple[Samples, dict[str, str]]]) -> None:
        super().__init__()
        self.build = build
        # The rows in order: serials, keys and contexts (Grouped's lists: no reference back to it, so
        # no cycle; a scrape runs with the cyclic collector paused, views.py).
        self.serials: list[int] = []
        self.keys: list[tuple] = []
        self.contexts: list[tuple] = []
        self.at: dict[int, int] | None = None  # serial -> its row's index, once a row is asked for

    def __missing__(self, serial: int) -> Samples:
        # Most scrapes ask for one row (the encoder's check of a family's first line): found by a scan, the
        # index of every row (20,000 at 20,000 ports) is built only once rows are asked for in numbers.
        if self.at is None and len(self) < 8:
            i = self.serials.index(serial)
        else:
            if self.at is None:
                self.at = {key: i for i, key in enumerate(self.serials)}
            i = self.at[serial]
        samples = self[serial] = self.build(self.keys[i], self.contexts[i])[0]
        return samples


class Grouped:
    """The families of one kind of row for one scrape, filled from `memo`, created in the order
    a row-by-row pass first needs them (the exposition's order)."""

    def __init__(self, out: Families, specs: dict[str, Spec], memo: Memo) -> None:
        self.out = out
        self.specs = specs
        self.memo = memo
        self.entries = memo.entries
        self.shapes: list[int] = []  # ids of the (unique) shape objects: no tuple hashed per row
        self.groups = _Groups(memo.build)  # this scrape's: the memo may start afresh meanwhile
        # The rows' serials in order, and each row's key and context: what _Groups builds a row from again.
        self.keys, self.row_keys, self.contexts = self.groups.serials, self.groups.keys, self.groups.contexts
        self.seen: dict[int, tuple] = {}
        self.families: dict[str, KeyedFamily] = {}

    def add(self, key: tuple, context: tuple = ()) -> tuple[int, dict[str, str]]:
        """The row of `key`, next in order; returns its serial and labels."""
        entry = self.entries.get(key)  # a kept row, most rows of most scrapes: no call, no tuple
        if entry is None:
            entry, samples = self.memo.get(key, context)
            if samples is not None:  # None: another thread built it meanwhile
                self.groups[entry[0]] = samples
        serial, shape, labels = entry
        self.keys.append(serial)
        self.row_keys.append(key)
        self.contexts.append(context)
        ident = id(shape)
        self.shapes.append(ident)
        if ident not in self.seen:
            self._see(ident, shape)
        return serial, labels

    def part(self) -> Part:
        """The rows added so far, to be appended whole to another scrape's Grouped (nodeblocks.py)."""
        return Part(self.keys, self.row_keys, self.contexts, self.shapes, dict(self.seen))

    def extend(self, part: Part, samples: dict[int, Samples] | None = None) -> None:
        """Rows of `part` next in order, as if added one by one; `samples`: those already built for them."""
        self.keys += part.serials
        self.row_keys += part.keys
        self.contexts += part.contexts
        self.shapes += part.shapes
        for ident, shape in part.seen.items():
            if ident not in self.seen:
                self._see(ident, shape)
        if samples:
            self.groups.update(samples)

    def _see(self, ident: int, shape: tuple) -> None:
        self.seen[ident] = shape
        for name, _ in shape:
            if name not in self.families:
                family = self.families[name] = self.out.keyed(name, *self.specs[name])
                family.groups = self.groups

    def finish(self) -> None:
        """Each family's keys (the rows with samples in it, in order) and sample count."""
        shapes = Counter(self.shapes)
        sizes = {ident: dict(self.seen[ident]) for ident in shapes}
        for name, family in self.families.items():
            having = {ident for ident in shapes if name in sizes[ident]}
            family.count = sum(sizes[ident][name] * shapes[ident] for ident in having)
            if len(having) == len(shapes):
                family.keys = self.keys  # every row: one list shared
            else:
                family.keys = [key for key, ident in zip(self.keys, self.shapes, strict=True) if ident in having]
