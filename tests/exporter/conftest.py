"""The exporter tests reuse the node_exporter parity helpers (tests/collectors), the simulated
fabric ingested poll by poll (tests/health_db) and the one with switches (tests/fabric): those
directories go on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
for helpers in ("collectors", "health_db", "fabric"):
    if str(TESTS / helpers) not in sys.path:
        sys.path.insert(0, str(TESTS / helpers))
