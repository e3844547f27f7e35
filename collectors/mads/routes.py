"""Every switch's linear forwarding table: which port each destination LID leaves by, as `ibroute` reads it.

Two steps per switch, along the directed route discovery reached it by (so it needs no LID of its
own): SwitchInfo says how far the table is used (LinearFDBTop), then one LinearForwardingTable query
per 64 LIDs up to there. All switches' queries share the engine's window. A block that does not
answer costs its 64 entries (left at 255, "no route") and an error naming them, never the table.

The tables are what the subnet manager programmed; where switches route adaptively they give the
default path only. `render_ibroute` prints one switch's table as `ibroute` does, so the two can be
compared line by line.
"""

from __future__ import annotations

from collectors.model import ReadError

from . import mad
from .engine import Engine, Query
from .mad import Reply
from .model import FabricNode


class Routes:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.errors: list[ReadError] = []
        self.tables: dict[int, bytearray] = {}  # node GUID -> the table being filled

    def query(self, switches: list[FabricNode]) -> None:
        for node in switches:
            self._smp(node, mad.ATTR_SWITCH_INFO, 0, "SwitchInfo", lambda r, e, node=node: self._got_info(node, r, e))

    def finish(self, switches: list[FabricNode]) -> None:
        """Hand each table read to its switch (after the engine has run)."""
        for node in switches:
            table = self.tables.get(node.guid)
            node.lft = bytes(table) if table is not None else None

    def _smp(self, node: FabricNode, attribute: int, modifier: int, name: str, callback) -> None:
        route = node.route

        def build(tid: int) -> bytes:
            return mad.directed_get(tid, attribute, modifier, route)

        what = f"{name} of {node.label}"
        self.engine.submit(
            Query(mad.CLASS_SUBN_DIRECTED_ROUTE, build, mad.PERMISSIVE_LID, 0, 0, callback, what, group=("lft", route))
        )

    def _got_info(self, node: FabricNode, reply: Reply | None, error: str | None) -> None:
        if reply is None:
            self.errors.append(ReadError(node.label, f"SwitchInfo: {error}"))
            return
        try:
            info = mad.decode_switch_info(reply.data)
        except Exception as e:  # a garbled reply costs this switch's table
            self.errors.append(ReadError(node.label, f"SwitchInfo: unreadable reply ({e})"))
            return
        top = min(info.linear_fdb_top, mad.MAX_UNICAST_LID)
        self.tables[node.guid] = bytearray([mad.NO_ROUTE]) * (top + 1)
        for block in range(top // mad.LFT_BLOCK + 1):
            self._smp(
                node,
                mad.ATTR_LINEAR_FORWARDING_TABLE,
                block,
                f"LinearForwardingTable block {block}",
                lambda r, e, block=block: self._got_block(node, block, r, e),
            )

    def _got_block(self, node: FabricNode, block: int, reply: Reply | None, error: str | None) -> None:
        first = block * mad.LFT_BLOCK
        where = f"{node.label} LIDs {first}-{first + mad.LFT_BLOCK - 1}"
        if reply is None:
            self.errors.append(ReadError(where, f"LinearForwardingTable: {error}"))
            return
        try:
            ports = mad.decode_lft_block(reply.data)
        except Exception as e:
            self.errors.append(ReadError(where, f"LinearForwardingTable: unreadable reply ({e})"))
            return
        table = self.tables[node.guid]
        table[first : first + mad.LFT_BLOCK] = ports[: max(0, len(table) - first)]


# -- ibroute's text --------------------------------------------------------------------------------------


def lid_owners(nodes: list[FabricNode]) -> dict[int, tuple[FabricNode, int]]:
    """LID -> (node, port) for every LID the sweep saw: a switch's port 0, each CA port's 2**LMC LIDs."""
    out: dict[int, tuple[FabricNode, int]] = {}
    for node in nodes:
        for number, port in node.ports.items():
            if port.lid:
                for lid in range(port.lid, port.lid + (1 << (port.lmc or 0))):
                    out[lid] = (node, number)
    return out


def render_ibroute(node: FabricNode, owners: dict[int, tuple[FabricNode, int]]) -> str:
    """One switch's table as `ibroute LID` prints it: every LID with a valid out port and whose it is."""
    table = node.lft or b""
    lines = [
        f"Unicast lids [0x0-{max(len(table) - 1, 0):#x}] of switch Lid {node.lid} guid {mad.format_guid(node.guid)}"
        f" ({node.description or ''}):",
        "  Lid  Out   Destination",
        "       Port     Info ",
    ]
    valid = 0
    for lid, out_port in enumerate(table):
        if out_port == mad.NO_ROUTE:
            continue
        valid += 1
        owner = owners.get(lid)
        info = ""
        if owner is not None:
            dest, number = owner
            kind = "Switch" if dest.is_switch else "Channel Adapter"
            guid = dest.ports[number].port_guid
            info = f"({kind} portguid {mad.format_guid(guid) if guid else '?'}: '{dest.description or ''}')"
        lines.append(f"0x{lid:04x} {out_port:03d} : {info}")
    lines.append(f"{valid} valid lids dumped ")
    return "\n".join(lines) + "\n"
