"""Routed paths between host ports, walked along the switches' forwarding tables, one hop a switch.

The tables (SwitchRoutes) say which port a packet for LID L leaves each switch by; the links (Link)
say what that port is cabled to. The path from a host port to a LID is: its own link up to its
leaf, then out of each switch by the table's port for that LID, until the link out of a switch
reaches a channel adapter. `ibtracert SRC DST` walks the same way.

Work is per destination LID, over arrays, not path by path in Python objects: a job's walks are all
its (source leaf, destination LID) pairs at once (numpy), one hop a step, and a pair that reaches a
switch another walk to the same LID already went through stops there (from there on the path is the
same). A 1,000-node job is a million paths in a few milliseconds. Whether a walk from a switch to a
LID loops or ends nowhere is found once per table change for every switch and LID (`outcome`); a job
whose walks do is told so in words (a `RouteFinding`), never by an exception.

What a LID belongs to comes from the tables too: the LIDs a leaf forwards out of a port cabled to a
channel adapter are that adapter port's (all 2**LMC of them), so no LID needs to be stored apart.
The tables give the default path only: where switches route adaptively, traffic may take others.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from collectors.mads.mad import NO_ROUTE

from .linkrows import LinkRow, host_names, link_rows
from .models import SwitchRoutes

MAX_HOPS = 64  # a directed route's limit: no sane path is longer
MAX_FINDINGS = 20  # routing findings told per job: past a few, the rest are the same fault
NOWHERE = -2  # a (switch, port) with no cable
ARRIVES, DEAD, LOOPS = 0, 1, 2  # where a walk from a switch to a LID ends


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

    def __init__(self, switches: list[tuple[str, str]], tables: list[bytes], links: list[LinkRow], hosts: dict) -> None:
        """`switches`: (GUID, name) of each switch whose table is in `tables`, in the same order."""
        self.names = [name for _, name in switches]
        self.index = {guid: i for i, (guid, _) in enumerate(switches)}
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
        self._arrays()
        # Each LID a leaf sends out of a port facing a channel adapter is that adapter port's (all 2**LMC of them).
        self.owner: dict[int, tuple[str, int]] = {}
        for i, hops in enumerate(self.hops):
            for port, hop in hops.items():
                if hop.end is not None:
                    for lid in np.flatnonzero(self.table[i] == port).tolist():
                        self.owner[lid] = hop.end
        self.lids_of: dict[tuple[str, int], list[int]] = defaultdict(list)
        for lid, end in sorted(self.owner.items()):
            self.lids_of[end].append(lid)
        self.outcome = self._outcomes()

    def _arrays(self) -> None:
        """The tables as one matrix (switch x LID, 255 past a table's end), and each (switch, port)'s link and
        next switch (-1: a channel adapter; -2: nothing there)."""
        width = max((len(t) for t in self.tables), default=1)
        self.lids = width
        self.table = np.full((len(self.tables), width), NO_ROUTE, dtype=np.uint8)
        for i, t in enumerate(self.tables):
            self.table[i, : len(t)] = np.frombuffer(t, dtype=np.uint8)
        self.hop_link = np.full((len(self.tables), 256), -1, dtype=np.int32)
        self.hop_next = np.full((len(self.tables), 256), NOWHERE, dtype=np.int32)
        for i, hops in enumerate(self.hops):
            for port, hop in hops.items():
                self.hop_link[i, port], self.hop_next[i, port] = hop.link, hop.switch
        self.table_flat = self.table.reshape(-1)
        self.hop_link_flat, self.hop_next_flat = self.hop_link.reshape(-1), self.hop_next.reshape(-1)
        self._seen = np.zeros(len(self.tables) * width, dtype=bool)  # (switch, LID) pairs walked for this job
        most = max((hop.link for hops in self.hops for hop in hops.values()), default=0)
        self._marks = np.zeros(most + 2, dtype=bool)  # links found for this job, and a spare slot for "none"

    def _outcomes(self) -> np.ndarray:
        """For every leaf (a switch with a channel adapter cabled: where walks start) and LID, where its walk ends:
        ARRIVES at a channel adapter (or the switch itself), DEAD (no route, or a port with no cable), or LOOPS
        (still walking after MAX_HOPS)."""
        n, width = self.table.shape
        out = np.full((n, width), ARRIVES, dtype=np.int8)  # only walks from a leaf are ever taken: the rest stay so
        leaves = np.array(sorted({leaf for leaf, _ in self.leaf_of.values()}), dtype=np.int32)
        out[leaves] = LOOPS
        start = np.repeat(leaves, width)
        lid = np.tile(np.arange(width, dtype=np.int32), leaves.size)
        at = start.copy()
        for _ in range(MAX_HOPS):
            if not at.size:
                break
            port = self.table_flat[at * width + lid]
            nxt = self.hop_next_flat[at * 256 + port]
            arrived = (nxt == -1) | (port == 0)
            dead = ~arrived & (nxt == NOWHERE)
            out[start[arrived], lid[arrived]] = ARRIVES
            out[start[dead], lid[dead]] = DEAD
            going = ~arrived & ~dead
            start, lid, at = start[going], lid[going], nxt[going]
        return out

    @classmethod
    def load(cls) -> RouteGraph:
        routes = SwitchRoutes.objects.order_by("switch__guid").values_list(
            "switch__guid", "switch__node__name", "switch__description", "lft"
        )
        switches, tables = [], []
        for guid, name, description, table in routes:
            switches.append((guid, name or description or guid))
            tables.append(bytes(table))
        links = link_rows()
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
        sources = np.array(sorted({self.leaf_of[e][0] for e in ends if e in self.leaf_of}), dtype=np.int32)
        lids = np.array(sorted({lid for e in ends for lid in self.lids_of.get(e, ())}), dtype=np.int32)
        if not sources.size or not lids.size:
            return out
        out.links.update(self._walk(sources, lids))
        bad = self.outcome[np.ix_(sources, lids)] != ARRIVES
        for s, d in zip(*np.nonzero(bad), strict=True):
            self._explain(int(sources[s]), int(lids[d]), out)
            if len(out.findings) >= MAX_FINDINGS:
                break
        return out

    def _walk(self, sources: np.ndarray, lids: np.ndarray) -> list[int]:
        """Every link on the walks from each source switch to each LID, all pairs at once, a hop a step. A pair
        is its flat index (switch x LIDs + LID) throughout; the links found are marked in a bitmap (cheaper than
        sorting out duplicates)."""
        width, seen, marks = self.lids, self._seen, self._marks
        key = (sources[:, None] * width + lids[None, :]).ravel()  # distinct: no need to check them
        touched = []
        for step in range(MAX_HOPS):
            if step:
                key = key[~seen[key]]
            if not key.size:
                break
            seen[key] = True
            touched.append(key)
            at = key // width
            hop = at * 256 + self.table_flat[key]
            marks[self.hop_link_flat[hop]] = True  # -1, no link: the spare last slot
            nxt = self.hop_next_flat[hop]
            going = nxt >= 0
            key = nxt[going] * width + (key[going] - at[going] * width)
        for done in touched:
            seen[done] = False
        marks[-1] = False
        found = np.flatnonzero(marks)
        marks[found] = False
        return found.tolist()

    def _explain(self, switch: int, lid: int, out: Paths) -> None:
        """The words for a walk that loops or ends nowhere, walked again in Python: rare, and then only once."""
        walked = [switch]
        end = self.owner.get(lid)
        for _ in range(MAX_HOPS):
            table = self.tables[switch]
            port = table[lid] if lid < len(table) else NO_ROUTE
            hop = self.hops[switch].get(port)
            if hop is None:
                why = "no route" if port == NO_ROUTE else f"port {port} is not cabled"
                self._finding(out, "no-route", f"{self.names[switch]}: {why} to LID {lid}{self._whose(end)}")
                return
            if hop.switch < 0:
                return
            if hop.switch in walked:
                path = " → ".join(self.names[s] for s in (*walked[walked.index(hop.switch) :], hop.switch))
                self._finding(out, "loop", f"routing loop to LID {lid}{self._whose(end)}: {path}")
                return
            walked.append(hop.switch)
            switch = hop.switch

    def _whose(self, end: tuple[str, int] | None) -> str:
        return f" ({self.labels.get(end, f'{end[0]} port {end[1]}')})" if end is not None else ""

    @staticmethod
    def _finding(out: Paths, kind: str, text: str) -> None:
        finding = RouteFinding(kind, text)
        if finding not in out.findings:
            out.findings.append(finding)
