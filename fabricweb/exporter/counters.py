"""The counter series of the ports, a family at a time: a host's (node_exporter's names, and its
hw_counters) and a switch's (`infiniband_switch_port_*`).
"""

from __future__ import annotations

from operator import itemgetter

from . import tables
from .names import HW_NOT_COUNTERS, PREFIX, CounterFamily
from .series import COUNTER, Families, Family


class PortCounters:
    """The counters (and a host's hw_counters) of the ports: the samples of the counter set, ~900,000
    at 20,000 host ports, built a family at a time (one list comprehension per counter), not a sample
    at a time. `specs`: the families and where each port's value comes from (names.HOST_COUNTERS,
    names.SWITCH_COUNTERS).

    The families are still created in the order a port-by-port pass would first use them
    (the exposition's order): when a port of a new shape (which counter files, which capped)
    comes by, the families it is the first to need are created there.
    """

    def __init__(self, out: Families, specs: tuple[CounterFamily, ...], hw: bool) -> None:
        self.out = out
        self.specs = specs
        self.hw_wanted = hw
        # Per port, in order: its labels, counter dicts and capped counters.
        self.labels: list[dict[str, str]] = []
        self.sources: dict[str, list[dict]] = {"counters": [], "counters_ext": []}
        self.hw: list[dict] = []
        self.capped: list[list[str]] = []
        self.shapes: set[tuple] = set()
        self.families: dict[str, Family] = {}
        self.hw_family: Family | None = None

    def add(self, labels: dict[str, str], row: tuple) -> None:
        at = tables.COUNTERS_AT
        capped = row[at] or []
        counters, counters_ext, hw_counters = row[at + 1] or {}, row[at + 2] or {}, row[at + 3] or {}
        if not self.hw_wanted:
            hw_counters = {}
        self.labels.append(labels)
        self.sources["counters"].append(counters)
        self.sources["counters_ext"].append(counters_ext)
        self.hw.append(hw_counters)
        self.capped.append(capped)
        if None in counters.values() or None in counters_ext.values():
            self._first_use(counters, counters_ext, capped, hw_counters)  # a null counter: no shape
            return
        shape = (tuple(counters), tuple(counters_ext), tuple(capped), bool(hw_counters))
        if shape not in self.shapes:
            self.shapes.add(shape)
            self._first_use(counters, counters_ext, capped, hw_counters)

    def _first_use(self, counters: dict, counters_ext: dict, capped: list[str], hw_counters: dict) -> None:
        """Create the families this port has a sample for, those not created yet."""
        dicts = {"counters": counters, "counters_ext": counters_ext}
        for c in self.specs:
            if c.name in self.families:
                continue
            if any(dicts[source].get(file) is not None and file not in capped for source, file in c.sources):
                self.families[c.name] = self.out.family(c.name, c.help, COUNTER)
        if hw_counters and self.hw_family is None:
            self.hw_family = self.out.family(
                PREFIX + "port_hw_stat",
                "The port's hw_counters/ files (driver-specific counts)",
                COUNTER,
                extra="counter",
            )

    def finish(self) -> None:
        """Fill the families: a port without a counter (or with it capped) has no sample; where a
        family has several sources, the first with a value that is not capped."""
        labels, capped = self.labels, self.capped
        any_capped = any(capped)
        read = self._columns()
        for c in self.specs:
            family = self.families.get(c.name)
            if family is None:
                continue
            (source, file), *others = c.sources
            values = list(read[source, file])
            if not any_capped and None not in values:
                family.labels, family.values = labels, values  # every port: share the labels column
                continue
            if not others:
                for port_labels, value, port_capped in zip(labels, values, capped, strict=True):
                    if value is not None and file not in port_capped:
                        family.labels.append(port_labels)
                        family.values.append(value)
                continue
            columns = [(file, values)]
            columns += [(f, read[s, f]) for s, f in others]
            for i, port_labels in enumerate(labels):
                port_capped = capped[i]
                for f, column in columns:
                    value = column[i]
                    if value is not None and f not in port_capped:
                        family.labels.append(port_labels)
                        family.values.append(value)
                        break
        if self.hw_family is not None:
            self._finish_hw(self.hw_family)

    def _columns(self) -> dict[tuple[str, str], tuple]:
        """(source, file) -> each port's value of that file (None where it has none), for the files of the
        families created: each port's dict read once by one itemgetter of all its source's files, not once
        per family (a get per port and family was a sixth of the default scrape at 20,000 ports)."""
        files: dict[str, dict[str, None]] = {}
        for c in self.specs:
            if c.name in self.families:
                for source, file in c.sources:
                    files.setdefault(source, {})[file] = None
        out: dict[tuple[str, str], tuple] = {}
        for source, names in files.items():
            dicts, names = self.sources[source], list(names)
            get = itemgetter(*names, *names[:1]) if len(names) == 1 else itemgetter(*names)  # always a tuple
            try:
                rows = list(map(get, dicts))
            except KeyError:  # a port without one of the files: read by get (None)
                rows = [tuple(map(d.get, names)) for d in dicts]
            columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
            out.update(((source, name), column) for name, column in zip(names, columns, strict=False))
        return out

    def _finish_hw(self, hw: Family) -> None:
        orders: dict[tuple[str, ...], list[str]] = {}
        for port_labels, hw_counters in zip(self.labels, self.hw, strict=True):
            if not hw_counters:
                continue
            # The ports of a fabric mostly have the same files: sort each set of names once.
            names = tuple(hw_counters)
            order = orders.get(names)
            if order is None:
                order = orders[names] = sorted(n for n in names if n not in HW_NOT_COUNTERS)
            values = [hw_counters[n] for n in order]
            if set(map(type, values)) <= {int}:
                hw.labels.extend([port_labels] * len(order))
                hw.extras.extend(order)
                hw.values.extend(values)
                continue
            for counter, value in zip(order, values, strict=True):
                if isinstance(value, int):  # a file that read as text is no count
                    hw.add(port_labels, value, counter)
