"""Made-up switches added to a fabric snapshot, as a stolen collector key could add them."""

from __future__ import annotations

NODE_TYPE_SWITCH = 2


def with_new_switches(snap: dict, count: int, ports: int = 3, prefix: str = "fake", start: int = 0) -> dict:
    """`snap` with `count` switches more, each a copy of its first switch's ports 0..`ports` with no far end:
    named `<prefix>0000`..., GUIDs 0x7e57... from `start` on, never used by the simulator."""
    nodes, port_rows = snap["nodes"]["rows"], snap["ports"]["rows"]
    counter_rows = snap["counters"]["rows"]
    columns = snap["ports"]["columns"]
    guid_at, lid_at = columns.index("port_guid"), columns.index("lid")
    peer_at, peer_port_at = columns.index("peer_node"), columns.index("peer_port")
    first = next(i for i, row in enumerate(nodes) if row[1] == NODE_TYPE_SWITCH)
    own_ports = [r for r in port_rows if r[0] == first and r[1] <= ports]
    own_counters = [r for r in counter_rows if r[0] == first and r[1] <= ports]
    for k in range(count):
        index, guid = len(nodes), f"0x7e57{start + k:012x}"
        node = list(nodes[first])
        node[0], node[3], node[4] = guid, f"{prefix}{k:04d}", guid
        nodes.append(node)
        for row in own_ports:
            row = list(row)
            row[0], row[guid_at], row[peer_at], row[peer_port_at] = index, guid, None, None
            if row[1] == 0:
                row[lid_at] = 1000 + k
            port_rows.append(row)
        counter_rows.extend([index, *row[1:]] for row in own_counters)
    return snap
