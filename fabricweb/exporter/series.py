"""Metric families as the collector builds them: columns of labels and values, not prometheus_client Samples.

One structure feeds both encoders: `to_metric()` gives prometheus_client's Metric (its
generate_latest is the reference, and serves any format the fast encoder does not know) and
fabricweb/exporter/encoder.py renders the same columns faster. A port's label dict is one
object shared by all of its samples, so the encoder renders it once. A family may have one
`extra` label whose value varies per sample (the counter of hw_stat and capped): its samples
carry `{**labels[i], extra: extras[i]}`. Columns, not a tuple per sample: at a million
samples, a million small containers cost time to build and to garbage-collect.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

GAUGE, COUNTER = "gauge", "counter"


class Family:
    __slots__ = ("extra", "extras", "help", "labels", "name", "sample_name", "type", "values")

    def __init__(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> None:
        self.name = name
        self.help = help
        self.type = typ
        # prometheus_client's own suffix for a counter's samples.
        self.sample_name = name + "_total" if typ == COUNTER else name
        self.extra = extra
        self.labels: list[dict[str, str]] = []
        self.values: list[float] = []
        self.extras: list[str] = []  # only with `extra`

    def add(self, labels: dict[str, str], value: float, extra: str | None = None) -> None:
        self.labels.append(labels)
        self.values.append(value)
        if self.extra is not None:
            self.extras.append(extra)

    def __len__(self) -> int:
        return len(self.values)

    def head(self, stop: int, start: int = 0) -> Family:
        """A family of this one's samples from `start` to `stop`."""
        family = Family(self.name, self.help, self.type, self.extra)
        family.labels, family.values = self.labels[start:stop], self.values[start:stop]
        family.extras = self.extras[start:stop]
        return family

    def to_metric(self) -> Metric:
        metric = Metric(self.name, self.help, self.type)
        name, extra = self.sample_name, self.extra
        if extra is None:
            metric.samples = [
                Sample(name, labels, float(v)) for labels, v in zip(self.labels, self.values, strict=True)
            ]
        else:
            metric.samples = [
                Sample(name, {**labels, extra: ev}, float(v))
                for labels, ev, v in zip(self.labels, self.extras, self.values, strict=True)
            ]
        return metric


class Families:
    """Metric families in the order first used."""

    def __init__(self) -> None:
        self._families: dict[str, Family] = {}

    def family(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> Family:
        """Family `name`, created (with its help, type and extra label) on first use."""
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = Family(name, help, typ, extra)
        return family

    def keyed(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> KeyedFamily:
        """KeyedFamily `name`, created on first use."""
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = KeyedFamily(name, help, typ, extra)
        return family

    def __iter__(self) -> Iterator[Family]:
        return iter(self._families.values())

    def sample_count(self) -> int:
        return sum(len(f) for f in self._families.values())


Samples = dict[str, list[tuple[dict[str, str], float, str | None]]]  # family name -> (labels, value, extra)


class KeyedFamily(Family):
    """A family whose samples come in groups, one group per row (a port, a device), each group a
    pure function of its row's key: `keys` (the keys' serials, grouped.Memo) in order,
    `groups[serial]` the key's samples.

    Pure, so the encoder may keep a group's rendered lines across scrapes by the serial (a
    number given to one key only): a row whose values changed has another key, never a stale line.
    """

    __slots__ = ("count", "groups", "keys")

    def __init__(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> None:
        super().__init__(name, help, typ, extra)
        self.keys: list[int] = []
        self.groups: dict[int, Samples] = {}  # shared by the families of one Grouped
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def expand(self, keys: list[int]) -> Family:
        """A plain family of the samples of `keys`."""
        family = Family(self.name, self.help, self.type, self.extra)
        name, extra = self.name, self.extra is not None
        for key in keys:
            for labels, value, extra_value in self.groups[key].get(name, ()):
                family.labels.append(labels)
                family.values.append(value)
                if extra:
                    family.extras.append(extra_value)
        return family

    def head(self, stop: int, start: int = 0) -> Family:
        return self.expand(self.keys).head(stop, start)

    def to_metric(self) -> Metric:
        return self.expand(self.keys).to_metric()
