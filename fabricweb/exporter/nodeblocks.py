"""`?set=health` on PostgreSQL: each node's health rows kept across scrapes, read again only where they changed.

A node's health series (its devices', ports', switch ports' and links') are made of its device and port
rows, its own name, kind, GUID and staleness, and the names and kinds of the nodes its ports' far ends sit
on (tables.PORT_HEALTH_FIELDS). So a scrape reads the nodes (collector._nodes, as every set does), each
node's row versions (tables.node_versions: one short text a node), and the device and port rows of only
the nodes whose versions, name, staleness or GUID changed since this process last read them; all of them
when any node was added, removed, renamed or changed kind. A kept node's rows are appended whole to the
scrape's Groupeds (grouped.Part): none of its rows is fetched, keyed or looked up again. What is served is
what the row-by-row path serves, sample for sample (tests/exporter/test_exporter_nodeblocks.py).

Why: at 20,000 ports the row-by-row path fetched 30,000 rows a scrape for series that change a few times a
day, ~0.4 s where the goal is 0.2 s (BENCHMARKS.md). SQLite has no row versions: it reads every row.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import tables
from .grouped import Grouped, Part
from .hostports import device_memo, port_memo
from .links import link_memo
from .selection import Selection
from .series import Families, Samples
from .specs import DEVICE_SPECS, LINK_SPECS, PORT_SPECS, SWITCH_PORT_SPECS
from .switchports import switch_port_memo

if TYPE_CHECKING:
    from .collector import FabricCollector

# The kinds of health rows, in the order collector._devices and _ports fill them, with what builds each.
KINDS = {
    "devices": (DEVICE_SPECS, device_memo),
    "ports": (PORT_SPECS, port_memo),
    "switch_ports": (SWITCH_PORT_SPECS, switch_port_memo),
    "links": (LINK_SPECS, link_memo),
}


@dataclass(slots=True)
class Block:
    """One node's health rows as its last read left them, and what they were read from."""

    version: tuple  # (its rows' versions, (name, stale, switch GUID or None))
    parts: dict[str, Part]  # by kind of row (KINDS)
    devices: dict[int, tuple]  # collector._devices' entries of its devices
    ports: dict[int, tuple]  # collector._ports' entries of its ports


class KeptBlocks:
    """This process's node blocks (docs/architecture.md, "What processes keep in memory"), shared by the threads of
    a web process. Owner: this module; cleared by `forget()`, and whenever the nodes' names or kinds change."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.blocks: dict[int, Block] = {}  # node id -> its block: only the nodes this process serves
        # The nodes' names and kinds the blocks were built under (a renamed far end is in another node's port rows).
        self.built_under: tuple = ()
        # The tables' row versions (tables.row_versions) when the nodes' (tables.node_versions) were last read, and
        # those: while no device or port row was written since, each node's are what they were.
        self.tables_at: tuple = ()
        self.node_versions: dict[int, tuple] = {}


KEPT = KeptBlocks()


def serves(selection: Selection) -> bool:
    """Whether a scrape of `selection` is built from node blocks: the health set, where row versions exist."""
    return selection.series == "health" and tables.has_row_versions()


def forget() -> None:
    """Drop every kept block (the next scrape reads every row)."""
    KEPT.forget()


class NodeBlocks:
    """The health rows of one scrape, from the kept blocks and the rows of the nodes that changed."""

    def __init__(self, collector: FabricCollector) -> None:
        self.collector = collector

    def read(self, out: Families, nodes: dict[int, tuple[str, bool, str | None]]) -> tuple[dict, dict] | None:
        """Fill `out` with the health rows of `nodes` (collector._nodes': in name order) as collector._devices
        and _ports would; returns their devices and ports entries. None, having filled nothing, inside a
        transaction that has written (tests; never a scrape): the caller reads every row."""
        if self.collector.names != KEPT.built_under:
            forget()
            KEPT.built_under = self.collector.names
        versions = _node_versions()
        if versions is None:
            return None
        wanted = {node_id: (versions.get(node_id), nodes[node_id]) for node_id in nodes}
        changed = [node_id for node_id, version in wanted.items() if _version_of(node_id) != version]
        built: dict[int, dict[str, dict[int, Samples]]] = {}
        if changed:
            built = self._build(changed, wanted, nodes, narrow=2 * len(changed) < len(versions))
        groupeds = {kind: Grouped(out, specs, memo) for kind, (specs, memo) in KINDS.items()}
        devices: dict[int, tuple] = {}
        ports: dict[int, tuple] = {}
        # The row-by-row path's order: devices by node name then device name, ports in their devices' order.
        order = sorted(nodes, key=lambda node_id: nodes[node_id][0])
        blocks = [(node_id, KEPT.blocks[node_id]) for node_id in order]
        for node_id, block in blocks:
            _extend(groupeds, block, "devices", built.get(node_id))
            devices.update(block.devices)
        for node_id, block in blocks:
            for kind in ("ports", "switch_ports", "links"):
                _extend(groupeds, block, kind, built.get(node_id))
            ports.update(block.ports)
        for grouped in groupeds.values():
            grouped.finish()
        return devices, ports

    def _build(
        self, changed: list[int], wanted: dict[int, tuple], nodes: dict[int, tuple], narrow: bool
    ) -> dict[int, dict[str, dict[int, Samples]]]:
        """Read the rows of the `changed` nodes (only theirs in SQL when `narrow`, else all of them) and keep
        each node's block; returns the samples built on the way, by node and kind, for this scrape's encoder."""
        collector = self.collector
        wanted_ids = set(changed)
        device_rows: dict[int, list[tuple]] = defaultdict(list)
        node_of: dict[int, int] = {}
        for row in tables.devices(changed if narrow else None, False):
            if row[1] in wanted_ids:
                device_rows[row[1]].append(row)
                node_of[row[0]] = row[1]
        port_rows: dict[int, list[tuple]] = defaultdict(list)
        for row in tables.ports(list(node_of) if narrow else None, False):
            node_id = node_of.get(row[1])
            if node_id is not None:
                port_rows[node_id].append(row)
        built: dict[int, dict[str, dict[int, Samples]]] = {}
        for node_id in changed:
            scratch = Families()
            devices = collector._devices(scratch, {node_id: nodes[node_id]}, device_rows.get(node_id, ()))
            ports = collector._ports(scratch, devices, port_rows.get(node_id, ()))
            parts = {kind: grouped.part() for kind, grouped in collector.grouped.items() if grouped is not None}
            built[node_id] = {
                kind: dict(grouped.groups) for kind, grouped in collector.grouped.items() if grouped is not None
            }
            KEPT.blocks[node_id] = Block(wanted[node_id], parts, devices, ports)
        return built


def _node_versions() -> dict[int, tuple] | None:
    """Each node's row versions, read again only when a device or port row was written since they were read
    (their order matters: rows read after their versions can only be newer than them, never older); None
    where versions say nothing (tables.row_versions)."""
    tables_now = tables.row_versions()
    if tables_now is None:
        return None
    if tables_now != KEPT.tables_at:
        KEPT.tables_at, KEPT.node_versions = tables_now, tables.node_versions()
    return KEPT.node_versions


def _version_of(node_id: int) -> tuple | None:
    block = KEPT.blocks.get(node_id)
    return None if block is None else block.version


def _extend(groupeds: dict[str, Grouped], block: Block, kind: str, built: dict[str, dict[int, Samples]] | None) -> None:
    part = block.parts.get(kind)
    if part is not None and part.serials:
        groupeds[kind].extend(part, built.get(kind) if built else None)
