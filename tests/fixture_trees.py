"""The real sysfs trees (tests/fixtures, in the repository) and snapshots made from them.

Shared by the collectors, telemetry, health and API tests: `from tests.fixture_trees import ...`.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collectors import read_host, to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # node_exporter's and procfs' test fixtures: see its README
PROCFS = FIXTURES / "procfs" / "sys"  # hfi1_0, mlx4_0 (2 ports, 4X QDR), mlx5_0 (1X EDR: a 4X link on one lane)
NODE_EXPORTER = FIXTURES / "node-exporter" / "sys"  # i40iw0 (N/A counters), mlx4_0 (counters_ext, capped)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def snapshot(root: Path = PROCFS, host: str = "cn001", at: datetime = T0) -> dict:
    return to_dict(read_host(str(root), host=host, use_verbs=False, now=at.timestamp()))


def later(snap: dict, seconds: float, bump: dict[str, int] | None = None, **port_changes) -> dict:
    """A copy of `snap` taken `seconds` later, with every port's counters raised by `bump`
    (counter name -> amount, where the counter exists and is known) and `port_changes` set on every port."""
    out = copy.deepcopy(snap)
    when = datetime.fromisoformat(snap["collected_at"]) + timedelta(seconds=seconds)
    out["collected_at"] = when.isoformat().replace("+00:00", "Z")
    for dev in out["devices"]:
        for port in dev["ports"]:
            for section in ("counters", "counters_ext"):
                for name, amount in (bump or {}).items():
                    if port[section].get(name) is not None:
                        port[section][name] += amount
            port.update(copy.deepcopy(port_changes))
    return out
