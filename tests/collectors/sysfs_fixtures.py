"""Where the real sysfs trees are (shared/fixtures beside the checkout), and a snapshot flattener."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
PROCFS = FIXTURES / "procfs" / "sys"
NODE_EXPORTER = FIXTURES / "node-exporter" / "sys"


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
