"""Covers collectors/facts.py, fabricweb/inventory/portfacts/.

Every derived port fact has one home (the package fabricweb/inventory/portfacts/, up in its statuses.py,
and collectors/facts.py for the state alone): its SQL and its Python agree on every kind of port, on
SQLite and PostgreSQL, and no other module of fabricweb/ or collectors/ states "up" again (the surfaces'
agreement: tests/dashboard/test_dashboard_port_facts.py)."""

from __future__ import annotations

import ast
import itertools
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from collectors import facts
from fabricweb.fabric.models import FabricNode
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Device, Node, Port

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    p for top in ("collectors", "fabricweb") for p in (REPO / top).rglob("*.py") if "migrations" not in p.parts
)
# The one definition of up: the state alone (standard library), and for a port row (SQL and Python: the
# portfacts module of the status; its other modules take up from it).
HOMES = {"collectors/facts.py", "fabricweb/inventory/portfacts/statuses.py"}
# Definitions by these names elsewhere may only hand over to the one definition (collectors.facts.is_up).
UP_NAMES = {"is_up", "up", "is_active", "api_up", "port_up"}
DELEGATES = {("collectors/model.py", "is_up"), ("fabricweb/health/rules/view.py", "is_active")}
STATE_NAMES = {"state", "state_id", "state_name", "worst_state_id"}
UP_VALUES = {facts.ACTIVE, facts.ACTIVE_DEFER, "ACTIVE", "ACTIVE_DEFER", "4: ACTIVE", "5: ACTIVE_DEFER"}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_up_value(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, bool) and node.value in UP_VALUES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_up_value(e) for e in node.elts)
    if isinstance(node, ast.Call) and _name(node.func) in ("frozenset", "set", "sorted", "tuple"):
        return any(_is_up_value(a) for a in node.args)
    return _name(node) in ("ACTIVE", "ACTIVE_DEFER")


def _calls_is_up(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _name(n.func) == "is_up" for n in ast.walk(node))


def restatements(path: Path, rel: str) -> list[str]:
    """Where `path` states up again: the line and what."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and _name(node) == "UP_STATE_IDS" and rel not in HOMES:
            found.append((node.lineno, "UP_STATE_IDS used (call collectors.facts.is_up or use portfacts)"))
        elif isinstance(node, ast.ImportFrom) and any(a.name == "UP_STATE_IDS" for a in node.names):
            if rel not in HOMES:
                found.append((node.lineno, "UP_STATE_IDS imported (call collectors.facts.is_up or use portfacts)"))
        elif isinstance(node, ast.Compare) and rel not in HOMES:
            operands = [node.left, *node.comparators]
            if any(_name(o) in STATE_NAMES for o in operands) and any(_is_up_value(o) for o in operands):
                found.append((node.lineno, "a port state compared with ACTIVE / ACTIVE_DEFER (4, 5)"))
        elif isinstance(node, ast.keyword) and node.arg and rel not in HOMES:
            if node.arg.startswith("state_id") and (node.arg.endswith("__in") or _is_up_value(node.value)):
                found.append((node.lineno, f"a query on port states ({node.arg}=): use portfacts' expressions"))
            elif node.arg in ("api_up", "api_degraded"):
                found.append((node.lineno, f"the old annotation {node.arg!r}: Port.up / Port.degraded / status"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in UP_NAMES:
            if rel in HOMES:
                continue
            if (rel, node.name) in DELEGATES and _calls_is_up(node):
                continue
            found.append((node.lineno, f"a definition of {node.name!r}: portfacts.is_up / collectors.facts.is_up"))
        elif isinstance(node, ast.Constant) and node.value in ("api_up", "api_degraded"):
            found.append((node.lineno, f"the old annotation {node.value!r}: Port.up / Port.degraded / status"))
        elif (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("fabricweb.api")
            and rel.startswith(("fabricweb/dashboard/", "fabricweb/exporter/"))
        ):
            found.append((node.lineno, f"imports {node.module} (the API's): take it from a shared module"))
    return [f"{rel}:{line}: {what}" for line, what in sorted(found)]


def test_no_module_states_up_again():
    found = [r for path in SOURCES for r in restatements(path, path.relative_to(REPO).as_posix())]
    assert found == [], "up, and the facts derived from a port, live in fabricweb/inventory/portfacts/:\n" + (
        "\n".join(found)
    )


def test_the_guard_finds_each_kind_of_restatement(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from collectors.facts import UP_STATE_IDS\n"
        "from fabricweb.api.freshness import is_stale\n"
        "def f(port):\n"
        "    return port.state_id == 4 or port.state_name == 'ACTIVE' or port.state_id in (4, 5)\n"
        "def is_up(port):\n"
        "    return port.state_id in UP_STATE_IDS\n"
        "rows = Port.objects.filter(state_id__in=[4, 5])\n"
        "ports.annotate(api_up=F('up'))\n"
    )
    found = restatements(bad, "fabricweb/dashboard/bad.py")
    assert [line.split(": ", 1)[0] for line in found] == [
        "fabricweb/dashboard/bad.py:1",
        "fabricweb/dashboard/bad.py:2",
        "fabricweb/dashboard/bad.py:4",
        "fabricweb/dashboard/bad.py:4",
        "fabricweb/dashboard/bad.py:4",
        "fabricweb/dashboard/bad.py:5",
        "fabricweb/dashboard/bad.py:6",
        "fabricweb/dashboard/bad.py:7",
        "fabricweb/dashboard/bad.py:8",
    ], found


def test_the_statuses_read_worst_first_in_operators_words():
    assert portfacts.STATUSES == (
        "down",
        "no_subnet_manager",
        "degraded",
        "vanished",
        "unknown",
        "up",
        "not_connected",
    )
    assert [s.words for s in portfacts.Status][:2] == ["down", "no subnet manager"]
    assert sorted(portfacts.Status, key=lambda s: s.rank) == list(portfacts.WORST_FIRST)
    assert portfacts.Status.NOT_CONNECTED.words == "not connected" and not portfacts.Status.NOT_CONNECTED.is_problem


def test_a_link_is_named_as_operators_name_it():
    assert portfacts.named_link("EDR", 4).name == "4X EDR"
    assert portfacts.named_link("EDR", 4).bytes_per_second == 12.5e9
    assert portfacts.named_link("EDR", 4, 100.0, "Ethernet").name == "100GbE"  # RoCE: mlx5 says 4X EDR
    assert portfacts.named_link("EDR", 1, None, "Ethernet").name == "25GbE"
    assert portfacts.named_link(None, None) is None


# --- SQL and Python agree -----------------------------------------------------------------------

STATES = (None, facts.DOWN, facts.INIT, facts.ARMED, facts.ACTIVE, facts.ACTIVE_DEFER)
PHYS = (None, 2, facts.LINK_UP)


def _every_kind_of_port(now) -> list[Port]:
    """A port for each combination of what the facts are made of, on a fresh node, a stale one and a switch."""
    fresh = Node.objects.create(name="cn001", first_seen_at=now, last_ingested_at=now)
    stale = Node.objects.create(name="cn002", first_seen_at=now, last_ingested_at=now - timedelta(hours=1), stale=True)
    switch = Node.objects.create(name="leaf01", kind=Node.Kind.SWITCH, first_seen_at=now, last_ingested_at=now)
    # A switch the sweeps no longer reach: its ports are unknown too.
    mute = Node.objects.create(name="leaf02", kind=Node.Kind.SWITCH, first_seen_at=now, last_ingested_at=now)
    FabricNode.objects.create(
        guid="0x0000000000000002", node_type=2, num_ports=1, node=mute, first_seen_at=now, missing_since=now
    )
    device = Device.objects.create(node=mute, name="switch", first_seen_at=now)
    up = {"state_id": facts.ACTIVE, "phys_state_id": facts.LINK_UP, "ever_up": True}
    Port.objects.create(device=device, number=1, first_seen_at=now, **up)
    # An agentless adapter the sweeps no longer reach (no agent makes it stale): its ports are unknown as well.
    lost = Node.objects.create(name="nfs01", kind=Node.Kind.ADAPTER, first_seen_at=now, last_ingested_at=now)
    FabricNode.objects.create(
        guid="0x0000000000000003", node_type=1, num_ports=1, node=lost, first_seen_at=now, missing_since=now
    )
    device = Device.objects.create(node=lost, name="mlx5_0", first_seen_at=now)
    Port.objects.create(device=device, number=1, first_seen_at=now, **up)
    ports, number = [], itertools.count(1)
    for node in (fresh, stale, switch):
        for layer in ("InfiniBand", "Ethernet"):
            device = Device.objects.create(node=node, name=f"dev-{layer}", first_seen_at=now)
            for state, phys, gone, ever_up, expect_up, link in itertools.product(
                STATES,
                PHYS,
                (None, now),
                (False, True),
                (None, False, True),
                (("EDR", 4, "EDR", 4), ("QDR", 4, "EDR", 4), ("SDR", 4, None, None)),
            ):
                speed, lanes, exp_speed, exp_lanes = link
                ports.append(
                    Port(
                        device=device,
                        number=next(number),
                        state_id=state,
                        phys_state_id=phys,
                        link_layer=layer,
                        speed=speed,
                        lanes=lanes,
                        rate_gbps=None if speed is None else lanes * {"EDR": 25.0, "QDR": 10.0, "SDR": 2.5}[speed],
                        expected_speed=exp_speed,
                        expected_lanes=exp_lanes,
                        ever_up=ever_up,
                        expect_up=expect_up,
                        vanished_at=gone,
                        first_seen_at=now,
                    )
                )
    Port.objects.bulk_create(ports, batch_size=500)
    return ports


def test_the_sql_and_the_python_of_every_fact_agree_on_every_kind_of_port(each_db):
    now = timezone.now()
    _every_kind_of_port(now)
    rows = portfacts.annotate(Port.objects.select_related("device__node__fabric_node")).annotate(
        has_link=portfacts.has_link_flag(), should=portfacts.SHOULD_BE_UP_FLAG
    )
    seen, unknown_nodes = set(), set()
    for p in rows:
        unknown = portfacts.node_unknown(p.device.node)
        assert (p.up, p.degraded) == (portfacts.is_up(p), portfacts.is_degraded(p)), p
        assert bool(p.has_link) == portfacts.has_link(p), p
        assert bool(p.should) == portfacts.should_be_up(p), p
        assert p.status == portfacts.status(p, unknown), (p.status, p.state_id, p.phys_state_id, p.vanished_at)
        if not unknown:  # Port.up is the statuses of a port that is up
            assert p.up == (p.status in portfacts.UP_STATUSES), p
        assert portfacts.has_link(p) or portfacts.link(p) is None
        seen.add(p.status)
        if unknown:
            unknown_nodes.add(p.device.node.name)
    assert seen == set(portfacts.STATUSES)  # every status is reached
    assert unknown_nodes == {"cn002", "leaf02", "nfs01"}  # the stale host, the switch and the adapter not reached
    counts = portfacts.status_counts(Port.objects.all())
    assert counts == portfacts.tally(p.status for p in rows)


def test_a_down_port_has_no_link_whatever_its_rate_file_says(each_db):
    now = timezone.now()
    node = Node.objects.create(name="cn001", first_seen_at=now, last_ingested_at=now)
    device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=now)
    # The kernel prints `10 Gb/sec (4X SDR)` for a DOWN/Polling port.
    p = Port.objects.create(
        device=device, number=1, state_id=facts.DOWN, phys_state_id=2, link_layer="InfiniBand",
        rate_gbps=10.0, lanes=4, speed="SDR", ever_up=True, first_seen_at=now,
    )  # fmt: skip
    assert portfacts.link(p) is None and portfacts.capacity_bytes_per_second(p) is None
    assert portfacts.status_now(p) == portfacts.Status.DOWN
    assert not Port.objects.filter(portfacts.HAS_LINK).exists()
