"""Routed paths between host ports, walked along the switches' forwarding tables, one hop a switch.

The tables (SwitchRoutes) say which port a packet for LID L leaves each switch by; the links (Link)
say what that port is cabled to. The path from a host port to a LID is: its own link up to its
leaf, then out of each switch by the table's port for that LID, until the link out of a switch
reaches a channel adapter. `ibtracert SRC DST` walks the same way.

Work is per destination LID, not per pair of hosts: for one LID, every source's walk stops at the
first switch an earlier walk for that LID already went through (from there on the path is the
same), so a job of N nodes costs about N times its leaves' hops, not N squared paths. A walk that
comes back to a switch it already went through is a routing loop, and one that meets a port with
no route or no cable ends nowhere: each is a `RouteFinding`, never an exception.

What a LID belongs to comes from the tables too: the LIDs a leaf forwards out of a port cabled to a
channel adapter are that adapter port's (all 2**LMC of them), so no LID needs to be stored apart.
The tables give the default path only: where switches route adaptively, traffic may take others.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from collectors.fabric.mad import NO_ROUTE

from .models import FabricNode, Link, SwitchRoutes
from .naming import candidate
from .nodes import NODE_TYPE_SWITCH

MAX_HOPS = 64  # a directed route's limit: no sane path is longer


@dataclass(frozen=True, slots=True)
class RouteFinding:
    kind: str  # "loop" or "no-route"
    text: str  # in an operator's words


@dataclass(slots=True)
class Paths:
    """The links a set of hosts' traffic crosses, and what went wrong walking them."""

    links: set[int] = field(default_factory=set)  # Link ids
    findings: list[RouteFinding] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)  # hosts with no port on the fabric


@dataclass(slots=True)
class Hop:
    link: int  # the Link out of this port
    switch: int  # the switch on the far side (its index), or -1 for a channel adapter
    end: tuple[str, int] | None  # the channel adapter's end (node GUID, port), when it is one


class RouteGraph:
    """The stored tables and links, indexed for walking. Built once per change of either."""

    def __init__(self, switches: list[FabricNode], tables: list[bytes], links: list[Link], hosts: dict) -> None:
        self.names = [s.node.name if s.node_id else (s.description or s.guid) for s in switches]
        self.index = {s.guid: i for i, s in enumerate(switches)}
        self.tables = tables
        self.hops: list[dict[int, Hop]] = [{} for _ in switches]
        self.leaf_of: dict[tuple[str, int], tuple[int, int]] = {}  # CA end -> (leaf index, leaf port), up links
        self.own_link: dict[tuple[str, int], int] = {}  # CA end -> its link to its leaf, up or down
        self.labels: dict[tuple[str, int], str] = {}
        self.ends_of: dict[str, list[tuple[str, int]]] = defaultdict(list)  # host name -> its CA ends
        for link in sorted(links, key=lambda k: k.gone_at is None):  # links up last: they win
            ends = ((link.a_guid, link.a_port, link.a_label), (link.b_guid, link.b_port, link.b_label))
            for (guid, port, label), (far_guid, far_port, _) in (ends, ends[::-1]):
                if guid in self.index or far_guid not in self.index:
                    continue
                end = (guid, port)  # a channel adapter's end, cabled to a switch
                self.own_link[end] = link.pk
                self.labels[end] = label
                if link.gone_at is None:
                    self.leaf_of[end] = (self.index[far_guid], far_port)
            if link.gone_at is not None:
                continue
            for (guid, port, _), (far_guid, far_port, _) in (ends, ends[::-1]):
                if guid in self.index:
                    far = self.index.get(far_guid, -1)
                    self.hops[self.index[guid]][port] = Hop(link.pk, far, None if far >= 0 else (far_guid, far_port))
        for end, host in hosts.items():
            if end in self.own_link:
                self.ends_of[host].append(end)
        # Each LID a leaf sends out of a port facing a channel adapter is that adapter port's.
        self.owner: dict[int, tuple[str, int]] = {}
        for i, table in enumerate(tables):
            facing = {port: hop.end for port, hop in self.hops[i].items() if hop.end is not None}
            if not facing:
                continue
            for lid, port in enumerate(table):
                end = facing.get(port)
                if end is not None:
                    self.owner[lid] = end
        self.lids_of: dict[tuple[str, int], list[int]] = defaultdict(list)
        for lid, end in self.owner.items():
            self.lids_of[end].append(lid)

    @classmethod
    def load(cls) -> RouteGraph:
        routes = list(SwitchRoutes.objects.select_related("switch__node").order_by("switch__guid"))
        switches = [r.switch for r in routes]
        tables = [bytes(r.lft) for r in routes]
        links = list(Link.objects.select_related("a__device__node", "b__device__node"))
        return cls(switches, tables, links, host_names(links))

    def paths(self, hosts: list[str]) -> Paths:
        """The links on the routed paths, either way, between every two of `hosts`, and each one's own link."""
        out = Paths()
        ends = []
        for host in hosts:
            found = self.ends_of.get(host)
            if not found:
                out.unmapped.append(host)
            ends.extend(found or ())
        for end in ends:
            out.links.add(self.own_link[end])
        if len(hosts) < 2:
            return out
        leaves = {self.leaf_of[end] for end in ends if end in self.leaf_of}
        sources = sorted({leaf for leaf, _port in leaves})
        for end in ends:
            for lid in self.lids_of.get(end, ()):
                self._walk_to(lid, end, sources, out)
        return out

    def _walk_to(self, lid: int, end: tuple[str, int], sources: list[int], out: Paths) -> None:
        tables, hops, links = self.tables, self.hops, out.links
        reached: set[int] = set()  # switches already known to lead to `lid` for this job
        for start in sources:
            switch, walked = start, []
            while switch not in reached:
                reached.add(switch)
                walked.append(switch)
                table = tables[switch]
                port = table[lid] if lid < len(table) else NO_ROUTE
                hop = hops[switch].get(port)
                if hop is None:
                    if port != 0:  # port 0 at the destination's own switch: not a CA's LID
                        why = "no route" if port == NO_ROUTE else f"port {port} is not cabled"
                        self._finding(out, "no-route", f"{self.names[switch]}: {why} to LID {lid} ({self._name(end)})")
                    break
                links.add(hop.link)
                if hop.switch < 0:
                    break
                if hop.switch in walked or len(walked) > MAX_HOPS:
                    path = " → ".join(self.names[s] for s in (*walked, hop.switch))
                    self._finding(out, "loop", f"routing loop to LID {lid} ({self._name(end)}): {path}")
                    break
                switch = hop.switch

    def _name(self, end: tuple[str, int]) -> str:
        return self.labels.get(end, f"{end[0]} port {end[1]}")

    @staticmethod
    def _finding(out: Paths, kind: str, text: str) -> None:
        finding = RouteFinding(kind, text)
        if finding not in out.findings:
            out.findings.append(finding)


def host_names(links: list[Link]) -> dict[tuple[str, int], str]:
    """Each channel adapter end's host: the agent's node name where its inventory port is known, else the
    first word of its node description (rdma-core's default description is `<hostname> <device>`)."""
    out: dict[tuple[str, int], str] = {}
    described = dict(FabricNode.objects.exclude(node_type=NODE_TYPE_SWITCH).values_list("guid", "description"))
    for link in links:
        for guid, port, inventory in ((link.a_guid, link.a_port, link.a), (link.b_guid, link.b_port, link.b)):
            if guid not in described:
                continue
            if inventory is not None:
                out[guid, port] = inventory.device.node.name
            else:
                name = candidate(described[guid])
                if name is not None:
                    out.setdefault((guid, port), name)
    return out


def hosts_beyond_switch_ports() -> dict[int, str]:
    """A leaf's inventory port id -> the host at the far end of its cable (up or gone), named as host_names does."""
    links = list(Link.objects.select_related("a__device__node", "b__device__node").order_by("first_seen_at"))
    hosts = host_names(links)
    out: dict[int, str] = {}
    for link in links:
        for (guid, port), far in (((link.a_guid, link.a_port), link.b), ((link.b_guid, link.b_port), link.a)):
            host = hosts.get((guid, port))
            if host is not None and far is not None and far.device.node.kind == "switch":
                out[far.pk] = host
    return out
