"""What the jobs tests read from a fabric sweep: the leaves each host is cabled to."""

from __future__ import annotations

HOSTS = [f"cn{i:03d}" for i in range(1, 10)]  # the simulated hosts, and the Slurm nodes of the same names


def leaves_of(snap: dict) -> dict[str, set[str]]:
    """host -> the names of the leaves its ports are cabled to, from the sweep."""
    nodes = snap["nodes"]["rows"]
    out: dict[str, set[str]] = {}
    for row in snap["ports"]["rows"]:
        node, peer = nodes[row[0]], row[12]
        if node[1] == 1 and peer is not None:
            out.setdefault(node[3].split()[0], set()).add(nodes[peer][3])
    return out
