"""Metric families as the collector builds them: rows of (labels, value), not prometheus_client Samples.

One structure feeds both encoders: `to_metric()` gives prometheus_client's Metric (its
generate_latest is the reference, and serves any format the fast encoder does not know) and
fabricweb/exporter/encoder.py renders the same rows faster. A port's label dict is one object
shared by all of its rows, so the encoder renders it once. A family may have one `extra`
label whose value varies per row (the counter of hw_stat and capped): its rows are
(labels, extra value, value), and its samples carry `{**labels, extra: extra value}`.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

GAUGE, COUNTER = "gauge", "counter"


class Family:
    __slots__ = ("extra", "help", "name", "rows", "sample_name", "type")

    def __init__(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> None:
        self.name = name
        self.help = help
        self.type = typ
        # prometheus_client's own suffix for a counter's samples.
        self.sample_name = name + "_total" if typ == COUNTER else name
        self.extra = extra
        self.rows: list[tuple] = []

    def to_metric(self) -> Metric:
        metric = Metric(self.name, self.help, self.type)
        name, extra = self.sample_name, self.extra
        if extra is None:
            metric.samples = [Sample(name, labels, float(value)) for labels, value in self.rows]
        else:
            metric.samples = [Sample(name, {**labels, extra: ev}, float(value)) for labels, ev, value in self.rows]
        return metric


class Families:
    """Metric families in the order first used."""

    def __init__(self) -> None:
        self._families: dict[str, Family] = {}

    def family(self, name: str, help: str, typ: str = GAUGE, extra: str | None = None) -> list[tuple]:
        """The rows of family `name`, created (with its help, type and extra label) on first use."""
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = Family(name, help, typ, extra)
        return family.rows

    def __iter__(self) -> Iterator[Family]:
        return iter(self._families.values())

    def sample_count(self) -> int:
        return sum(len(f.rows) for f in self._families.values())
