"""Covers collectors/facts.py, collectors/model.py, fabricweb/health/rules/view.py, fabricweb/inventory/portfacts/,
collectors/counters.py, fabricweb/telemetry/storage/columns.py, fabricweb/telemetry/validation/schema.py; through
them fabricweb/inventory/portfacts/cables.py, fabricweb/inventory/portfacts/links.py,
fabricweb/inventory/portfacts/pcie.py, fabricweb/inventory/portfacts/statuses.py.

Each InfiniBand fact has one home (collectors/facts.py): every user imports it, nobody writes it again."""

from __future__ import annotations

import ast
from pathlib import Path

from collectors import facts
from collectors.model import Enum, Port

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    p
    for top in ("collectors", "fabricweb")
    for p in (REPO / top).rglob("*.py")
    if "migrations" not in p.parts and p.name != "facts.py"
)


def test_up_means_active_or_active_defer():
    assert {4, 5} == facts.UP_STATE_IDS
    assert [facts.PORT_STATES[i] for i in sorted(facts.UP_STATE_IDS)] == ["ACTIVE", "ACTIVE_DEFER"]
    assert Port(1, state=Enum(5, "ACTIVE_DEFER")).is_up and not Port(1, state=Enum(2, "INIT")).is_up


def test_every_layer_judges_up_by_the_one_definition():
    from fabricweb.health.rules.view import PortView
    from fabricweb.inventory import portfacts
    from fabricweb.inventory.models import Port as PortRow

    assert dict(portfacts.UP.children)["state_id__in"] == sorted(facts.UP_STATE_IDS)
    # The columns the database keeps are built from the same expressions (their values: tests/api, tests/telemetry).
    assert PortRow._meta.get_field("up").expression is portfacts.UP_FLAG
    assert PortRow._meta.get_field("degraded").expression is portfacts.DEGRADED_FLAG
    assert portfacts.is_up(PortRow(state_id=5)) and not portfacts.is_up(PortRow(state_id=3))
    assert PortView("cn001", "mlx5_0", 1, 0.0, state_id=5).is_active
    # Nobody else states it: tests/test_portfacts.py reads every module for a copy.


def test_the_error_counters_are_the_sample_columns_and_the_pma_widths():
    from collectors.counters import PMA_WIDTH_BITS
    from fabricweb.telemetry.storage.columns import ERRORS, RING_COUNTERS

    assert tuple(ERRORS.values()) == facts.ERROR_COUNTERS
    assert (*facts.ERROR_COUNTERS, facts.XMIT_WAIT) == RING_COUNTERS
    assert set(facts.ERROR_COUNTERS) | {facts.XMIT_WAIT} | set(facts.TRAFFIC_COUNTERS) == set(PMA_WIDTH_BITS)


def _literals(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in node.elts):
            values = {e.value for e in node.elts}
            if values == {4, 5}:
                yield node.lineno, "the up states {4, 5}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value == facts.NODE_NAME_PATTERN:
                yield node.lineno, "the node-name pattern"
            if node.value in ("Initializing", "Active (deferred)"):
                yield node.lineno, "ibstat's state words"
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SCHEMA_VERSION" for t in node.targets):
            yield node.lineno, "the schema version"


def test_no_module_writes_a_fact_again():
    copies = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in SOURCES
        for line, what in _literals(ast.parse(path.read_text(), str(path)))
    ]
    assert copies == [], "import these from collectors/facts.py instead:\n" + "\n".join(copies)


def test_the_snapshot_carries_the_schema_ingest_reads():
    from fabricweb.telemetry.validation.schema import KNOWN_SCHEMAS

    assert facts.SCHEMA_VERSION in KNOWN_SCHEMAS
