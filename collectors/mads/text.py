"""An iblinkinfo-like view of a sweep: every switch port, its link, the far end, and what the link could be.

    Switch leaf07 (0xb8599f0000000107) MF0;leaf07:MQM8790-HS2F/U1, LID 3
      port 12  Active/LinkUp   4X HDR   200 Gb/s  ==>  cn042 mlx5_0 port 1
      port 13  Active/LinkUp   1X HDR    50 Gb/s  ==>  cn043 mlx5_0 port 1  (could be 4X HDR)
      port 14  Down/Polling                        ==>  (no link)

Words are ibstat's and iblinkinfo's, so a NOC engineer reads it as they read those.
"""

from __future__ import annotations

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from collectors.link import SPEED_RANK, best_common, format_gbps, make_rate

from .mad import format_guid
from .model import FabricNode, FabricPort, FabricSweep


def node_name(node: FabricNode) -> str:
    return node.description or format_guid(node.guid)


def port_name(node: FabricNode, number: int) -> str:
    """`leaf07 port 12`, or `cn042 mlx5_0 port 1` for a CA (its description names host and device)."""
    return f"{node_name(node)} port {number}"


def could_be(port: FabricPort, peer: FabricPort | None) -> str | None:
    """`could be 4X HDR` when the link trained below what both ends support, else None."""
    if peer is None or port.speed is None or port.lanes is None:
        return None
    best = best_common(port.speed_supported, port.width_supported, peer.speed_supported, peer.width_supported)
    if best is None:
        return None
    slow = SPEED_RANK[port.speed] < SPEED_RANK[best.speed]
    narrow = port.lanes < best.lanes
    return f"could be {best.link_name}" if slow or narrow else None


def render_text(sweep: FabricSweep) -> str:
    by_guid = {n.guid: n for n in sweep.nodes}
    switches = [n for n in sweep.nodes if n.is_switch]
    lines = []
    links = degraded = 0
    for node in sorted(switches, key=node_name):
        lid = f", LID {node.lid}" if node.lid else ""
        desc = f" {node.description}" if node.description and node.description != node_name(node) else ""
        lines.append(f"Switch {node_name(node)} ({format_guid(node.guid)}){desc}{lid}")
        for number in sorted(n for n in node.ports if n > 0):
            port = node.ports[number]
            state = f"{IBSTAT_STATES.get(port.state, '?')}/{PHYS_STATES.get(port.phys_state, '?')}"
            up = port.phys_state == 5
            link = ""
            if up and port.speed and port.lanes:
                link = f"{port.lanes}X {port.speed} {format_gbps(make_rate(port.speed, port.lanes).gbps):>5} Gb/s"
            peer_node = by_guid.get(port.peer[0]) if port.peer else None
            peer_port = peer_node.ports.get(port.peer[1]) if peer_node and port.peer else None
            far = port_name(peer_node, port.peer[1]) if peer_node else "(no link)"
            note = could_be(port, peer_port) if up else None
            if peer_node is not None:
                links += 1
                degraded += note is not None
            lines.append(f"  port {number:<3} {state:<22} {link:<20} ==>  {far}" + (f"  ({note})" if note else ""))
    cas = sum(1 for n in sweep.nodes if not n.is_switch)
    lines.append("")
    lines.append(
        f"{len(switches)} switches, {cas} channel adapters, {links} switch port links "
        f"({degraded} below what both ends support), {sweep.queries} queries in {sweep.duration_s:.2f} s"
    )
    for error in sweep.errors:
        lines.append(f"error: {error.path}: {error.reason}")
    return "\n".join(lines) + "\n"
