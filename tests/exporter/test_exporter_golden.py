"""Covers fabricweb/exporter/collector.py, fabricweb/exporter/selection.py.

The exposition of a small fixed fabric, pinned byte for byte (names, labels, help, order, values).

Regenerate after an intended change with `UPDATE_GOLDEN=1 pytest tests/exporter/test_exporter_golden.py`
and read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client.exposition import generate_latest

from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.selection import Selection
from tests.health_db.health_db_fabric import SimFabric

GOLDEN = Path(__file__).parent / "golden" / "small-fabric.prom"
# The one line that varies between runs: how long this scrape took.
VARIES = "fabricweb_exporter_collect_seconds "


def exposition(fabric: SimFabric) -> str:
    text = generate_latest(FabricCollector(Selection(), fabric.now)).decode()
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(VARIES))


def test_the_exposition_of_a_small_fabric_is_pinned(tmp_path, each_db):
    # A ConnectX-6 node and a ConnectX-3 node: a downgraded link, a saturated port with capped
    # 32-bit counters, symbol errors; the clock is the simulator's, so every value is fixed.
    fabric = SimFabric(tmp_path / "sim", nodes=2)
    fabric.polls(2)
    fabric.fault("cn001/mlx5_0/1:speed=QDR", "cn001/mlx5_1/1:symbol-errors=600/min", "cn002/mlx4_0/1:saturate")
    fabric.polls(2)
    text = exposition(fabric)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
