"""The real sysfs trees, and a snapshot flattener for comparing reads."""

from __future__ import annotations

from tests.fixture_trees import FIXTURES, NODE_EXPORTER, PROCFS

__all__ = ["FIXTURES", "NODE_EXPORTER", "PROCFS", "flat"]


def flat(d: object, path: tuple = ()) -> dict[tuple, object]:
    """Leaves of a snapshot dict, devices keyed by name and ports by number, so that one
    lost port or value shows as exactly its own keys."""
    out: dict[tuple, object] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flat(v, (*path, k)))
    elif isinstance(d, list) and path and path[-1] in ("devices", "ports"):
        for item in d:
            out.update(flat(item, (*path, item.get("name", item.get("port")))))
    else:
        out[path] = d
    return out
