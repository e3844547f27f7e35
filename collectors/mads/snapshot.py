"""The fabric snapshot: one sweep as columnar JSON, the contract between the fabric collector and ingest.

A sweep is ten thousand ports or more, so names are given once: each section states its
columns at its top and every row is an array of values in that order. Widths and speeds
in masks are bits in the order the snapshot states in `widths` and `speeds`.

    {"kind": "fabric", "schema": 1, "collector": "fabric-sm01", "collected_at": "...Z", "mode": "full",
     "sweep": {"duration_s": 1.4, "queries": 35073, "local": {"guid": "0x...", "port": 1}},
     "widths": [1, 2, 4, 8, 12], "speeds": ["SDR", ..., "XDR"],
     "nodes": {"columns": ["guid", "type", ...], "rows": [["0xb8599f0000000100", 2, 40, "leaf07", ...], ...]},
     "ports": {"columns": ["node", "port", ...], "rows": [[0, 12, ...], ...]},
     "counters": {"columns": ["node", "port", "symbol_error", ...], "rows": [[0, 12, 0, ...], ...]},
     "routes": {"columns": ["node", "lid", "lft"], "rows": [[0, 3, "ff01020016..."], ...]},
     "errors": [{"path": "leaf05 (0x...) port 3", "reason": "NodeInfo beyond it: no answer (timeout) after 3 tries"}]}

`node` and `peer_node` in rows are indexes into `nodes.rows`. Counters are in base units
(data in bytes) and null when the PMA did not answer or has no such counter. In a
`"mode": "counters"` snapshot `ports` has no rows: the links are those of the last full sweep.
`routes` is there only when the sweep read the switches' forwarding tables: a switch's `lft` is its
table in hex, two digits a LID from LID 0 (`ff`: no route), half the size of a list of numbers.
"""

from __future__ import annotations

from collectors.link import SPEEDS, WIDTHS
from collectors.snapshot import iso_utc

from .mad import format_guid
from .model import FabricSweep
from .pma import COUNTER_NAMES

KIND = "fabric"
ROUTE_COLUMNS = ("node", "lid", "lft")
NODE_COLUMNS = ("guid", "type", "ports", "description", "system_guid", "vendor_id", "device_id", "revision")
PORT_COLUMNS = (
    "node",
    "port",
    "port_guid",
    "lid",
    "state",
    "phys_state",
    "lanes",
    "speed",
    "width_enabled",
    "width_supported",
    "speed_enabled",
    "speed_supported",
    "peer_node",
    "peer_port",
)
SPEED_NAMES = tuple(s.name for s in SPEEDS)
_WIDTH_BIT = {lanes: 1 << i for i, lanes in enumerate(WIDTHS)}
_SPEED_BIT = {name: 1 << i for i, name in enumerate(SPEED_NAMES)}


def width_mask(widths) -> int | None:
    return None if widths is None else sum(_WIDTH_BIT[w] for w in widths)


def speed_mask(speeds) -> int | None:
    return None if speeds is None else sum(_SPEED_BIT[s] for s in speeds)


def _guid(value: int | None) -> str | None:
    return None if value is None else format_guid(value)


def to_dict(sweep: FabricSweep) -> dict:
    """The JSON-ready fabric snapshot (plain dicts, lists, str, int, float, None)."""
    index = {node.guid: i for i, node in enumerate(sweep.nodes)}
    nodes, ports, counters = [], [], []
    for i, node in enumerate(sweep.nodes):
        nodes.append(
            [
                format_guid(node.guid),
                node.node_type,
                node.num_ports,
                node.description,
                _guid(node.system_guid),
                node.vendor_id,
                node.device_id,
                node.revision,
            ]
        )
        for number in sorted(node.ports):
            port = node.ports[number]
            if sweep.mode == "full":
                peer = port.peer
                ports.append(
                    [
                        i,
                        number,
                        _guid(port.port_guid),
                        port.lid,
                        port.state,
                        port.phys_state,
                        port.lanes,
                        port.speed,
                        width_mask(port.width_enabled),
                        width_mask(port.width_supported),
                        speed_mask(port.speed_enabled),
                        speed_mask(port.speed_supported),
                        index.get(peer[0]) if peer else None,
                        peer[1] if peer and peer[0] in index else None,
                    ]
                )
            if port.counters:
                counters.append([i, number, *(port.counters.get(name) for name in COUNTER_NAMES)])
    routes = [[i, node.lid, node.lft.hex()] for i, node in enumerate(sweep.nodes) if node.lft is not None]
    local = None
    if sweep.local is not None:
        local = {"guid": format_guid(sweep.local[0]), "port": sweep.local[1]}
    snap = {
        "kind": KIND,
        "schema": sweep.schema,
        "collector": sweep.collector,
        "collected_at": iso_utc(sweep.collected_at),
        "mode": sweep.mode,
        "sweep": {"duration_s": round(sweep.duration_s, 6), "queries": sweep.queries, "local": local},
        "widths": list(WIDTHS),
        "speeds": list(SPEED_NAMES),
        "nodes": {"columns": list(NODE_COLUMNS), "rows": nodes},
        "ports": {"columns": list(PORT_COLUMNS), "rows": ports},
        "counters": {"columns": ["node", "port", *COUNTER_NAMES], "rows": counters},
        "errors": [{"path": e.path, "reason": e.reason} for e in sweep.errors],
    }
    if sweep.routes:
        snap["routes"] = {"columns": list(ROUTE_COLUMNS), "rows": routes}
    return snap


def routes_dict(sweep: FabricSweep) -> dict:
    """`fabric --routes --format json`: each switch's table as a list, out port per LID from 0 (255: none)."""
    return {
        "routes": [
            {"guid": format_guid(node.guid), "lid": node.lid, "name": node.description, "lft": list(node.lft)}
            for node in sweep.nodes
            if node.is_switch and node.lft is not None
        ]
    }
