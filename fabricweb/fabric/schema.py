"""Validation of a fabric snapshot (collectors.mads.snapshot.to_dict) into typed values.

The host snapshot's rules hold here too: everything is checked before anything is stored,
the first problem raises SnapshotRejected naming where it is (`ports row 812, column lanes`),
unknown keys and unknown counter columns are ignored, strings must be storable, and caps
refuse a snapshot far past any real fabric before it can cost minutes and gigabytes.

Rows are checked with a few type tests each, no call per value: a sweep is ten thousand ports
or more, and this must cost a switch port less than a host port's validation costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from itertools import chain

from collectors.facts import NODE_NAME_PATTERN
from collectors.link import SPEED_BY_NAME, WIDTHS
from collectors.mads.mad import MAX_UNICAST_LID
from collectors.mads.pma import COUNTER_NAMES
from collectors.mads.snapshot import KIND, NODE_COLUMNS, PORT_COLUMNS, ROUTE_COLUMNS, SPEED_NAMES
from fabricweb.inventory.models import TEXT_MAX
from fabricweb.telemetry.validation import checks
from fabricweb.telemetry.validation.checks import GUID_RE, MAX_COUNTER, SnapshotRejected, storable

KNOWN_FABRIC_SCHEMAS = frozenset({1})
# Past any real fabric (the largest have some ten thousand hosts, dual-ported, and a thousand switches):
# anything larger is broken or hostile, and is refused before it is walked.
MAX_NODES = 65_536
MAX_PORTS = 262_144
MAX_ERRORS = 20_000
MAX_PORT_NUMBER = 255
COLLECTOR_RE = re.compile(NODE_NAME_PATTERN)
MODES = ("full", "counters")
_COUNTER_INDEX = {name: i for i, name in enumerate(COUNTER_NAMES)}


@dataclass(slots=True)
class FabricNodeIn:
    guid: str
    node_type: int
    num_ports: int
    description: str | None
    system_guid: str | None
    vendor_id: int | None
    device_id: int | None
    revision: int | None


@dataclass(slots=True)
class FabricPortIn:
    node: int  # index into FabricIn.nodes
    number: int
    port_guid: str | None
    lid: int | None
    state: int | None
    phys_state: int | None
    lanes: int | None
    speed: str | None
    # Masks in this server's order: bit i is collectors.link.WIDTHS[i] / SPEEDS[i].
    width_enabled: int | None
    width_supported: int | None
    speed_enabled: int | None
    speed_supported: int | None
    peer_node: int | None
    peer_port: int | None


@dataclass(slots=True)
class FabricIn:
    schema: int
    collector: str
    collected_at: datetime
    ts: float
    mode: str
    duration_s: float | None
    queries: int | None
    local: tuple[str, int] | None
    nodes: list[FabricNodeIn]
    ports: list[FabricPortIn]
    # (node index, port number) -> counters in COUNTER_NAMES order (None: not read); unknown columns dropped
    counters: dict[tuple[int, int], list[int | None]]
    errors: list[dict[str, str]]
    # Switch node index -> (its LID, its forwarding table: byte L the out port for LID L); None: not read
    routes: dict[int, tuple[int | None, bytes]] | None = None


def parse_fabric(data, now: datetime) -> FabricIn:
    """Check a decoded fabric snapshot and return its typed form; SnapshotRejected on the first problem."""
    if type(data) is not dict:
        raise SnapshotRejected(f"expected a JSON object, got {type(data).__name__}")
    collector = data.get("collector")
    named = collector if type(collector) is str and COLLECTOR_RE.fullmatch(collector) else None
    try:
        if data.get("kind") != KIND:
            raise SnapshotRejected(f"kind {checks.shown(data.get('kind'))}: not a fabric snapshot")
        schema = data.get("schema")
        if type(schema) is not int or schema not in KNOWN_FABRIC_SCHEMAS:
            known = ", ".join(map(str, sorted(KNOWN_FABRIC_SCHEMAS)))
            raise SnapshotRejected(f"unknown fabric schema version {checks.shown(schema)} (this server reads {known})")
        if named is None:
            raise SnapshotRejected(
                f"collector {checks.shown(collector)} is not a name (letters, digits, '-', '_', '.')"
            )
        when = checks.collected_at(data.get("collected_at"), now)
        mode = data.get("mode")
        if mode not in MODES:
            raise SnapshotRejected(f"mode {checks.shown(mode)}: expected one of {', '.join(MODES)}")
        sweep = checks.mapping(data.get("sweep"), "sweep", optional=True)
        duration = checks.number(sweep.get("duration_s"), "sweep.duration_s", 86_400)
        queries = checks.integer(sweep.get("queries"), "sweep.queries", 0, 1 << 40)
        local = _local(sweep.get("local"))
        width_map = _mask_map(data.get("widths"), list(WIDTHS), "widths")
        speed_map = _mask_map(data.get("speeds"), list(SPEED_NAMES), "speeds")
        nodes = _nodes(checks.mapping(data.get("nodes"), "nodes"))
        ports = _ports(checks.mapping(data.get("ports"), "ports"), len(nodes), width_map, speed_map)
        if mode == "counters" and ports:
            raise SnapshotRejected("a counters-only snapshot carries no port rows")
        counters = _counters(checks.mapping(data.get("counters"), "counters"), len(nodes))
        errors = checks.sequence(data.get("errors"), "errors", MAX_ERRORS)
        errors = [_error(e, f"errors[{i}]") for i, e in enumerate(errors)]
        routes = None
        if data.get("routes") is not None:
            if mode != "full":
                raise SnapshotRejected("a counters-only snapshot carries no routes")
            routes = _routes(checks.mapping(data.get("routes"), "routes"), nodes)
    except SnapshotRejected as e:
        e.host = f"fabric collector {named}" if named else None
        raise
    return FabricIn(
        schema,
        collector,
        when,
        when.timestamp(),
        mode,
        duration,
        queries,
        local,
        nodes,
        ports,
        counters,
        errors,
        routes,
    )


def _local(value) -> tuple[str, int] | None:
    if value is None:
        return None
    d = checks.mapping(value, "sweep.local")
    return checks.guid(d.get("guid"), "sweep.local.guid", optional=False), checks.integer(
        d.get("port"), "sweep.local.port", 0, MAX_PORT_NUMBER, optional=False
    )


def _mask_map(value, ours: list, where: str) -> list[int] | None:
    """How to turn a mask in the snapshot's stated order into ours: None when the orders are the same."""
    if value == ours:
        return None
    if type(value) is not list or not value or len(value) > 16 or len(set(map(repr, value))) != len(value):
        raise SnapshotRejected(f"{where}: expected the list the masks' bits stand for, got {checks.shown(value)}")
    bits = []
    for item in value:
        if item not in ours:
            raise SnapshotRejected(f"{where}: {checks.shown(item)} is not one this server knows ({ours})")
        bits.append(1 << ours.index(item))
    table = []
    for mask in range(1 << len(bits)):
        table.append(sum(bit for i, bit in enumerate(bits) if mask >> i & 1))
    return table


def _columns(section: dict, expected: tuple[str, ...], where: str) -> list[int]:
    """Positions of the expected columns in the section's stated order; every one must be stated."""
    columns = section.get("columns")
    if type(columns) is not list or len(columns) > 256 or not all(type(c) is str for c in columns):
        raise SnapshotRejected(f"{where}.columns: expected a list of column names")
    missing = [c for c in expected if c not in columns]
    if missing:
        raise SnapshotRejected(f"{where}.columns: {', '.join(missing)} missing")
    return [columns.index(c) for c in expected]


def _rows(section: dict, where: str, limit: int) -> list:
    rows = section.get("rows")
    if type(rows) is not list:
        raise SnapshotRejected(f"{where}.rows: expected a list of rows")
    if len(rows) > limit:
        raise SnapshotRejected(f"{where}: {len(rows)} rows, more than the {limit} of any real fabric")
    return rows


def _bad(where: str, index: int, column: str, expected: str, value) -> SnapshotRejected:
    return SnapshotRejected(f"{where} row {index}, {column}: expected {expected}, got {checks.shown(value)}")


def _text(value, limit: int) -> bool:
    return value is None or (type(value) is str and len(value) <= limit and storable(value))


def _uint(value, high: int) -> bool:
    return value is None or (type(value) is int and 0 <= value <= high)


class KeptNodeRows:
    """The nodes section of the last sweep this process checked, and the nodes it gave. A sweep names every node
    it reached, 33,000 rows at 100,000 ports (70-130 ms to check: 1-2 µs a switch port), nearly always those of the
    sweep before: rows equal to those give its nodes again, for one comparison of lists (~1 ms). Equal only where
    their values are all text, integers and nulls, the types the rows were checked to hold: 1 == 1.0 == True, and
    a row of floats or booleans is checked, and refused, whatever the last sweep held. Owner: this module; one
    entry; forget() (the tests' conftest, after each test)."""

    __slots__ = ("columns", "nodes", "rows")

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.columns: list[int] | None = None
        self.rows: list | None = None
        self.nodes: list[FabricNodeIn] = []

    def get(self, columns: list[int], rows: list) -> list[FabricNodeIn] | None:
        if rows != self.rows or columns != self.columns or not _PLAIN.issuperset(map(type, chain.from_iterable(rows))):
            return None
        return list(self.nodes)

    def keep(self, columns: list[int], rows: list, nodes: list[FabricNodeIn]) -> None:
        # A copy of each row (of text, integers and nulls): rows edited in place after this are not the kept ones.
        self.columns, self.rows, self.nodes = columns, [row[:] for row in rows], list(nodes)


_PLAIN = frozenset({str, int, type(None)})
KEPT_ROWS = KeptNodeRows()


def _nodes(section: dict) -> list[FabricNodeIn]:
    at = _columns(section, NODE_COLUMNS, "nodes")
    rows = _rows(section, "nodes", MAX_NODES)
    kept = KEPT_ROWS.get(at, rows)
    if kept is not None:
        return kept
    out = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        if type(row) is not list or len(row) <= max(at):
            raise SnapshotRejected(f"nodes row {i}: expected a list of {len(at)} values or more")
        guid, node_type, num_ports, desc, system_guid, vendor, device, revision = (row[k] for k in at)
        if type(guid) is not str or not GUID_RE.fullmatch(guid):
            raise _bad("nodes", i, "guid", "a GUID such as 0x0c42a10300a1b2c1", guid)
        if guid in seen:
            raise SnapshotRejected(f"nodes row {i}: GUID {guid} appears twice")
        seen.add(guid)
        if type(node_type) is not int or not 1 <= node_type <= 3:
            raise _bad("nodes", i, "type", "1 (CA), 2 (switch) or 3 (router)", node_type)
        if type(num_ports) is not int or not 1 <= num_ports <= MAX_PORT_NUMBER:
            raise _bad("nodes", i, "ports", f"a port count from 1 to {MAX_PORT_NUMBER}", num_ports)
        if not _text(desc, TEXT_MAX):
            raise _bad("nodes", i, "description", f"text of at most {TEXT_MAX} characters", desc)
        if system_guid is not None and (type(system_guid) is not str or not GUID_RE.fullmatch(system_guid)):
            raise _bad("nodes", i, "system_guid", "a GUID or null", system_guid)
        for name, value, high in (("vendor_id", vendor, 0xFFFFFF), ("device_id", device, 0xFFFF)):
            if not _uint(value, high):
                raise _bad("nodes", i, name, f"an integer from 0 to {high}", value)
        if not _uint(revision, 0xFFFFFFFF):
            raise _bad("nodes", i, "revision", "a 32-bit integer", revision)
        out.append(FabricNodeIn(guid, node_type, num_ports, desc, system_guid, vendor, device, revision))
    KEPT_ROWS.keep(at, rows, out)
    return out


def _ports(section: dict, nodes: int, width_map, speed_map) -> list[FabricPortIn]:
    at = _columns(section, PORT_COLUMNS, "ports")
    out = []
    seen: set[tuple[int, int]] = set()
    for i, row in enumerate(_rows(section, "ports", MAX_PORTS)):
        if type(row) is not list or len(row) <= max(at):
            raise SnapshotRejected(f"ports row {i}: expected a list of {len(at)} values or more")
        node, number, port_guid, lid, state, phys, lanes, speed, w_en, w_sup, s_en, s_sup, peer, peer_port = (
            row[k] for k in at
        )
        if type(node) is not int or not 0 <= node < nodes:
            raise _bad("ports", i, "node", f"an index into nodes (0 to {nodes - 1})", node)
        if type(number) is not int or not 0 <= number <= MAX_PORT_NUMBER:
            raise _bad("ports", i, "port", f"a port number from 0 to {MAX_PORT_NUMBER}", number)
        if (node, number) in seen:
            raise SnapshotRejected(f"ports row {i}: node {node} port {number} appears twice")
        seen.add((node, number))
        if port_guid is not None and (type(port_guid) is not str or not GUID_RE.fullmatch(port_guid)):
            raise _bad("ports", i, "port_guid", "a GUID or null", port_guid)
        if not _uint(lid, 0xFFFF):
            raise _bad("ports", i, "lid", "an integer from 0 to 65535", lid)
        if not _uint(state, 15):
            raise _bad("ports", i, "state", "null or a port state from 0 to 15", state)
        if not _uint(phys, 15):
            raise _bad("ports", i, "phys_state", "null or a physical state from 0 to 15", phys)
        if lanes is not None and (type(lanes) is not int or lanes not in WIDTHS):
            raise _bad("ports", i, "lanes", f"null or one of {WIDTHS}", lanes)
        if speed is not None and (type(speed) is not str or speed not in SPEED_BY_NAME):
            raise _bad("ports", i, "speed", f"null or one of {', '.join(SPEED_BY_NAME)}", speed)
        masks = []
        for name, value, table in (
            ("width_enabled", w_en, width_map),
            ("width_supported", w_sup, width_map),
            ("speed_enabled", s_en, speed_map),
            ("speed_supported", s_sup, speed_map),
        ):
            limit = len(table) - 1 if table is not None else 0xFFFF
            if not _uint(value, limit):
                raise _bad("ports", i, name, f"a mask from 0 to {limit}", value)
            masks.append(table[value] if table is not None and value is not None else value)
        if peer is not None and (type(peer) is not int or not 0 <= peer < nodes):
            raise _bad("ports", i, "peer_node", "null or an index into nodes", peer)
        if (peer is None) != (peer_port is None) or not _uint(peer_port, MAX_PORT_NUMBER):
            raise _bad("ports", i, "peer_port", "a port number with peer_node, null without", peer_port)
        out.append(FabricPortIn(node, number, port_guid, lid, state, phys, lanes, speed, *masks, peer, peer_port))
    return out


def _counters(section: dict, nodes: int) -> dict[tuple[int, int], list[int | None]]:
    columns = section.get("columns")
    if type(columns) is not list or len(columns) > 512 or not all(type(c) is str for c in columns):
        raise SnapshotRejected("counters.columns: expected a list of column names")
    if columns[:2] != ["node", "port"]:
        raise SnapshotRejected("counters.columns: the first two must be node and port")
    # Each stated counter's place among ours; a counter this server does not know is read past.
    place = [_COUNTER_INDEX.get(name) for name in columns[2:]]
    width = len(columns)
    same = columns[2:] == list(COUNTER_NAMES)
    out: dict[tuple[int, int], list[int | None]] = {}
    for i, row in enumerate(_rows(section, "counters", MAX_PORTS)):
        if type(row) is not list or len(row) != width:
            raise SnapshotRejected(f"counters row {i}: expected {width} values, as the columns state")
        node, number = row[0], row[1]
        if type(node) is not int or not 0 <= node < nodes:
            raise _bad("counters", i, "node", "an index into nodes", node)
        if type(number) is not int or not 0 <= number <= MAX_PORT_NUMBER:
            raise _bad("counters", i, "port", "a port number", number)
        stated = row[2:]
        # Most rows, told with a few builtins over the row (checks.all_counters): every value null or a counter,
        # in our columns' order (the collector's own). Any other row goes value by value, to word what is wrong.
        values = stated if same and checks.all_counters(stated) else _values(stated, place, columns, i)
        if (node, number) in out:
            raise SnapshotRejected(f"counters row {i}: node {node} port {number} appears twice")
        out[node, number] = values
    return out


def _values(stated: list, place: list[int | None], columns: list[str], i: int) -> list[int | None]:
    """One counters row's values in COUNTER_NAMES order, each checked."""
    values: list[int | None] = [None] * len(COUNTER_NAMES)
    for k, value in enumerate(stated):
        if value is None:
            continue
        if type(value) is not int or not 0 <= value <= MAX_COUNTER:
            raise _bad("counters", i, columns[k + 2], "null or a counter from 0 to 2^66", value)
        if place[k] is not None:
            values[place[k]] = value
    return values


def _routes(section: dict, nodes: list[FabricNodeIn]) -> dict[int, tuple[int | None, bytes]]:
    """Each switch's forwarding table: hex, two digits a LID from LID 0, at most the unicast LID range."""
    at = _columns(section, ROUTE_COLUMNS, "routes")
    out: dict[int, tuple[int | None, bytes]] = {}
    longest = 2 * (MAX_UNICAST_LID + 1)
    for i, row in enumerate(_rows(section, "routes", MAX_NODES)):
        if type(row) is not list or len(row) <= max(at):
            raise SnapshotRejected(f"routes row {i}: expected a list of {len(at)} values or more")
        node, lid, lft = (row[k] for k in at)
        if type(node) is not int or not 0 <= node < len(nodes) or nodes[node].node_type != 2:
            raise _bad("routes", i, "node", "the index of a switch in nodes", node)
        if node in out:
            raise SnapshotRejected(f"routes row {i}: node {node} appears twice")
        if not _uint(lid, MAX_UNICAST_LID):
            raise _bad("routes", i, "lid", f"null or a unicast LID up to {MAX_UNICAST_LID}", lid)
        if type(lft) is not str or len(lft) % 2 or len(lft) > longest:
            raise _bad("routes", i, "lft", f"hex text, two digits a LID, at most {longest} digits", lft[:40])
        try:
            table = bytes.fromhex(lft)
        except ValueError:
            raise _bad("routes", i, "lft", "hex digits", lft[:40]) from None
        out[node] = (lid, table)
    return out


def _error(value, where: str) -> dict[str, str]:
    d = checks.mapping(value, where)
    return {
        "path": checks.text(d.get("path"), f"{where}.path", 1024, optional=False),
        "reason": checks.text(d.get("reason"), f"{where}.reason", 512, optional=False),
    }
