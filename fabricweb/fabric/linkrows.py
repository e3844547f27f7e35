"""The fabric's cables as plain rows, and the host at each channel adapter end: what the route walks
(fabric/paths.py), the congestion roots and the drain's host names read, without the walks' arrays."""

from __future__ import annotations

from typing import NamedTuple

from .models import FabricNode, Link
from .naming import candidate
from .nodes import NODE_TYPE_SWITCH


class LinkRow(NamedTuple):
    """The columns of a Link the walks and the names need, read as plain values (no model objects: a fabric of
    12,000 links read as Links with their ports' devices and nodes took 1.5 s, as these 30 ms)."""

    pk: int
    a_guid: str
    a_port: int
    a_label: str
    b_guid: str
    b_port: int
    b_label: str
    gone_at: object  # datetime | None
    a_id: int | None  # the ends' inventory ports
    b_id: int | None
    a_node: str | None  # their nodes' names and kinds
    b_node: str | None
    a_kind: str | None
    b_kind: str | None


LINK_COLUMNS = (
    "pk", "a_guid", "a_port", "a_label", "b_guid", "b_port", "b_label", "gone_at", "a_id", "b_id",
    "a__device__node__name", "b__device__node__name", "a__device__node__kind", "b__device__node__kind",
)  # fmt: skip


def link_rows() -> list[LinkRow]:
    return [LinkRow(*row) for row in Link.objects.order_by("first_seen_at", "pk").values_list(*LINK_COLUMNS)]


def host_names(links: list[LinkRow]) -> dict[tuple[str, int], str]:
    """Each channel adapter end's host: the agent's node name where its inventory port is known, else the
    first word of its node description (rdma-core's default description is `<hostname> <device>`)."""
    out: dict[tuple[str, int], str] = {}
    described = dict(FabricNode.objects.exclude(node_type=NODE_TYPE_SWITCH).values_list("guid", "description"))
    for link in links:
        for guid, port, node in ((link.a_guid, link.a_port, link.a_node), (link.b_guid, link.b_port, link.b_node)):
            if guid not in described:
                continue
            if node is not None:
                out[guid, port] = node
            else:
                name = candidate(described[guid])
                if name is not None:
                    out.setdefault((guid, port), name)
    return out


def hosts_beyond_switch_ports() -> dict[int, str]:
    """A leaf's inventory port id -> the host at the far end of its cable (up or gone), named as host_names does."""
    links = link_rows()
    hosts = host_names(links)
    out: dict[int, str] = {}
    for link in links:
        for end, far, kind in (((link.a_guid, link.a_port), link.b_id, link.b_kind),
                               ((link.b_guid, link.b_port), link.a_id, link.a_kind)):  # fmt: skip
            host = hosts.get(end)
            if host is not None and far is not None and kind == "switch":
                out[far] = host
    return out
