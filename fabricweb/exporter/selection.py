"""Which series a scrape asks for: `?set=`, `?shard=K/N`, `?node=GLOB` (docs/metrics.md).

Prometheus splits a large fabric over several scrape jobs with `shard`; the hash of a node
name is stable across processes and releases (CRC-32, not Python's salted hash()). Switches are
nodes here too: `shard` and `node` pick them by their name, and a link goes with the node of the
end that speaks for it.

`all` (the default) is `health` and `counters`: node_exporter's infiniband series and a few health
series, within SERIES_PER_PORT_BUDGET series per host port (docs/metrics.md, "Sets"). The others are
only served when asked for, each kept out of the default scrape's series per port: `detail` (series with
many labels per port and link, the lanes), `hw` (the hw_counters/ files), `pcie` (the HCA's PCIe link
in detail, and which GPU sits how near which device).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.http import QueryDict

SETS = ("all", "health", "counters", "detail", "hw", "pcie")
# What the default scrape may cost a Prometheus, per host port (tests/exporter/test_exporter_series_budget.py).
SERIES_PER_PORT_BUDGET = 30
MAX_SHARDS = 1024
_SHARD = re.compile(r"(\d{1,4})/(\d{1,4})")


class SelectionError(ValueError):
    """A query parameter /metrics cannot honour: the message says which and why."""


@dataclass(frozen=True, slots=True)
class Selection:
    series: str = "all"  # one of SETS
    shard: int = 0
    shards: int = 1
    node_glob: str | None = None

    @property
    def health(self) -> bool:
        return self.series in ("all", "health")

    @property
    def counters(self) -> bool:
        return self.series in ("all", "counters")

    @property
    def detail(self) -> bool:
        return self.series == "detail"

    @property
    def hw(self) -> bool:
        return self.series == "hw"

    @property
    def pcie(self) -> bool:
        return self.series == "pcie"

    def wants(self, node: str) -> bool:
        if self.shards > 1 and shard_of(node, self.shards) != self.shard:
            return False
        return self.node_glob is None or fnmatchcase(node, self.node_glob)


def shard_of(node: str, shards: int) -> int:
    return zlib.crc32(node.encode()) % shards


def served_shards(text: str | None) -> frozenset[tuple[int, int]] | None:
    """FABRIC_METRICS_SHARDS ("0/4,1/4") as {(K, N), ...}; None when unset (the whole fabric is served).

    Raises SelectionError for a K/N past MAX_SHARDS, K >= N or shards of different N: a process serving
    "0/4,1/3" would keep nodes of overlapping shards, and no scrape job asks for that."""
    if text is None:
        return None
    served = set()
    for item in text.split(","):
        served.add(_shard(item, "FABRIC_METRICS_SHARDS"))
    if len({shards for _, shards in served}) > 1:
        raise SelectionError(f"FABRIC_METRICS_SHARDS={text!r}: every shard of one N, e.g. 0/4,1/4")
    return frozenset(served)


def _shard(text: str, what: str) -> tuple[int, int]:
    match = _SHARD.fullmatch(text)
    if match:
        shard, shards = int(match[1]), int(match[2])
        if 0 < shards <= MAX_SHARDS and shard < shards:
            return shard, shards
    raise SelectionError(f"{what}={text!r}: K/N with 0 <= K < N <= {MAX_SHARDS}, e.g. 0/4")


def parse(query: QueryDict) -> Selection:
    unknown = sorted(set(query) - {"set", "shard", "node"})
    if unknown:
        raise SelectionError(f"unknown parameter(s): {', '.join(unknown)} (known: set, shard, node)")
    series = query.get("set", "all")
    if series not in SETS:
        raise SelectionError(f"set={series!r}: one of {', '.join(SETS)}")
    shard, shards = 0, 1
    if "shard" in query:
        shard, shards = _shard(query["shard"], "shard")
    node_glob = query.get("node") or None
    if node_glob is not None and len(node_glob) > 100:
        raise SelectionError("node: a shell pattern of at most 100 characters, e.g. node=cn0*")
    return Selection(series, shard, shards, node_glob)
