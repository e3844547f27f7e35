"""Covers fabricweb/inventory/rowwrites.py, fabricweb/.

Port and device rows are written outside ingest only through fabricweb/inventory/rowwrites.py, which tells
every ingest process (an update() sends no signal: the rows an ingest process held were written back).

Read from the source with `ast`: a call of `.update(...)` or `.bulk_update(...)` whose receiver starts at
`Port` or `Device` (`Port.objects.filter(...).update(...)`), and a raw write (`update_rows(Port, ...)`),
fail anywhere but the modules that are ingest's own writes, where the process that writes holds the rows.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"Port", "Device"}
# Ingest's own writes (the rows it holds in memory change with them), and the one door for everyone else.
ALLOWED = (
    "fabricweb/telemetry/storage/",
    "fabricweb/health/engine/engine.py",  # the expected links judged inside ingest
    "fabricweb/fabric/linkstore.py",  # a sweep's link facts (it invalidates the hosts' rows it changes)
    "fabricweb/inventory/rowwrites.py",
)


def _root(node: ast.expr) -> str | None:
    """The name a chain of attributes and calls starts at: `Port` for Port.objects.filter(...).update."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def row_writes(source: str) -> list[tuple[int, str]]:
    """(line, what) of every write of Port or Device rows in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("update", "bulk_update") and _root(func.value) in MODELS:
            found.append((node.lineno, f"{_root(func.value)}...{func.attr}()"))
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "update_rows" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in MODELS:
            found.append((node.lineno, f"update_rows({node.args[0].id}, ...)"))
    return found


def test_port_and_device_rows_are_written_outside_ingest_only_through_rowwrites():
    offending = []
    for path in sorted((ROOT / "fabricweb").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(ALLOWED) or "/migrations/" in relative:
            continue
        offending += [f"{relative}:{line}: {what}" for line, what in row_writes(path.read_text())]
    assert not offending, "write these through fabricweb/inventory/rowwrites.py:\n" + "\n".join(offending)


def test_the_guard_sees_each_form_of_write():
    source = """
Port.objects.filter(pk=1).update(best_speed="EDR")
Device.objects.all().update(fw_ver="x")
Port.objects.bulk_update(ports, ["lid"])
store.update_rows(Port, ports, ["lid"])
update_rows(Device, devices, ["fw_ver"])
seen.update(Port.objects.values_list("pk", flat=True))  # a set's update: not a write of rows
Node.objects.filter(pk=1).update(ingest_token=None)  # a node's row: not a port's or device's
"""
    assert [line for line, _ in row_writes(source)] == [2, 3, 4, 5, 6]
