"""Helpers of the telemetry tests: snapshots of the real fixture trees, read as a node would send them; `manage`,
a manage.py command on a database of the test's; JSONISH, `_paths` and `_apply`, the almost-right JSON values the
property tests put into a valid snapshot, at every path it has; BASES and NOW, the snapshots and clock those tests
start from, `mutations` and `mutated` to change them; `dgx_polls`, a DGX-like node's polls from the simulator."""

from __future__ import annotations

import copy
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import strategies as st

from collectors import read_host, to_dict
from collectors.sim import Fabric
from tests.e2e.e2e_harness import SECRET, clean_env
from tests.fixture_trees import FIXTURES, NODE_EXPORTER, PROCFS, T0, later, snapshot

__all__ = [
    "BASES",
    "FIXTURES",
    "JSONISH",
    "NODE_EXPORTER",
    "NOW",
    "PROCFS",
    "T0",
    "_apply",
    "_paths",
    "dgx_polls",
    "later",
    "manage",
    "mutated",
    "mutations",
    "port_of",
    "snapshot",
]


NOW = datetime(2026, 3, 1, 12, 5, tzinfo=UTC)
BASES = [snapshot(NODE_EXPORTER, host="cn002", at=T0), snapshot(PROCFS, host="cn003", at=T0)]


def dgx_polls(tmp_path, count: int) -> list[dict]:
    """`count` polls of a DGX-like node (8 HCAs below PCIe switches, 8 GPUs), 10 s apart, counters moving."""
    fabric = Fabric.create(str(tmp_path), 1, seed=3, layout_faults=("cn001:dgx",))
    out = []
    for k in range(count):
        if k:
            fabric.step(10)
        at = T0.timestamp() + 10 * k
        out.append(to_dict(read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False, now=at)))
    return out


def port_of(snap: dict, device: str, number: int) -> dict:
    dev = next(d for d in snap["devices"] if d["name"] == device)
    return next(p for p in dev["ports"] if p["port"] == number)


REPO = Path(__file__).resolve().parents[2]


def manage(url: str, *args: str) -> str:
    env = clean_env(DATABASE_URL=url, SECRET_KEY=SECRET, LOG_LEVEL="WARNING")
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


# Values that are almost right: each is the same as a valid one under ==, or valid at one field and not another.
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=300),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.sampled_from([0.0, 1.0, 4.0, 16.0, 100.0, 1e6, float("nan"), float("inf"), -0.0, 2.0**64]),
    st.sampled_from([2**64 - 1, 4 * (2**64 - 1), 4 * (2**64 - 1) + 1, 255, 256, 0xFFFF, 0x10000, 7, 8, 4095]),
    st.text(max_size=70),
    st.sampled_from(["", "\x00", "a\x00", "\ud800", "é", "x" * 33, "x" * 65, "x" * 257, "EDR", "HDR", "ACTIVE"]),
    st.sampled_from(["2026-03-01T12:00:00Z", "2026-03-01T12:00:00", "2999-01-01T00:00:00Z", "mlx5_0", "a b"]),
)

JSONISH = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "name", "x", "é"]), inner),
    max_leaves=6,
)


def _apply(snap, path, op, value):
    target = snap
    for key in path[:-1]:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return  # an earlier mutation removed this path
    key = path[-1]
    try:
        if op == "delete":
            del target[key]
        elif op == "rename" and isinstance(target, dict) and key in target:
            target[value if isinstance(value, str) else f"{key}!"] = target.pop(key)
        else:
            target[key] = value
    except (KeyError, IndexError, TypeError):
        pass


def mutations(bases: list) -> st.SearchStrategy:
    """1 to 3 changes to make to one of `bases`: (a path it has, "set", "delete" or "rename", an almost-right value)."""
    paths = sorted({p for base in bases for p in _paths(base) if p}, key=repr)
    change = st.tuples(st.sampled_from(paths), st.sampled_from(["set", "delete", "rename"]), JSONISH)
    return st.lists(change, min_size=1, max_size=3)


def mutated(base, changes: list) -> object:
    """A copy of `base` with `changes` (from `mutations`) made."""
    out = copy.deepcopy(base)
    for path, op, value in changes:
        _apply(out, path, op, value)
    return out
