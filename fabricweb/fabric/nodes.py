"""A sweep's nodes: every FabricNode reached, brought up to date (or missing since this sweep), and each
switch seen for the first time given an inventory Node of kind `switch` (fabricweb.fabric.naming), each
agentless adapter read for the first time one of kind `adapter` (fabricweb.fabric.adapters).

Every FabricNode is needed at every sweep, and loading them all (a host's HCAs among them) was most of a
counters sweep's fixed cost, so an ingest process keeps them between sweeps (`KeptNodes`), as it keeps
its nodes' rows (telemetry/storage/rowcache.py), while nobody else wrote them. That is what the
collectors' `Node.ingest_token` tells: every applied sweep, with or without a cache, writes a new one on
its collector's row (which it holds locked), so rows kept are reused only when every collector's token
is still the one this process last saw. Each kept FabricNode's inventory Node is read afresh at every
sweep (they are the switches and agentless adapters, not the hosts' HCAs): a host that takes its name
back from a switch (hostnames.yield_to_host), an operator's rename or delete, is seen at once. A
FabricNode written through the ORM elsewhere clears the tokens (`on_fabric_node_changed`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from operator import attrgetter

from fabricweb.inventory.models import Node
from fabricweb.telemetry.storage import rowcache, store

from . import naming
from .models import FabricNode
from .schema import FabricIn, FabricNodeIn

log = logging.getLogger("fabricweb.fabric.ingest")  # fabric ingest's log: these lines are its own

NODE_TYPE_SWITCH = 2

_NODE_FIELDS = ["node_type", "num_ports", "description", "system_guid", "vendor_id", "device_id", "revision", "lid"]
_VALUE_FIELDS = _NODE_FIELDS[:-1]  # what a sweep of either mode says of a node (a full one adds the lid)
_STORED = attrgetter(*_VALUE_FIELDS)  # one C call a node instead of a getattr per field, at every sweep


class KeptNodes:
    """guid -> FabricNode as this process's last applied sweep left them, with the collectors' tokens it saw then
    (docs/architecture.md, "What processes keep in memory"). Owner: this module; no bound beyond the fabric's
    nodes (one per GUID reached); reused only while every collector's token is the one seen (module docstring),
    taken out for the length of a sweep and kept again only after its commit; forget() drops them (the tests'
    conftest, after each test)."""

    __slots__ = ("known", "tokens")

    def __init__(self) -> None:
        self.known: dict[str, FabricNode] | None = None
        self.tokens: dict[int, int | None] = {}

    def forget(self) -> None:
        self.known, self.tokens = None, {}

    def take(self, tokens: dict[int, int | None]) -> dict[str, FabricNode] | None:
        """The nodes kept, when `tokens` (every collector's, read under this sweep's lock) are those they were kept
        with, each with its inventory Node read now; None (and nothing kept) otherwise."""
        known, self.known = self.known, None
        if known is None or tokens != self.tokens:
            return None
        ids = {fn.node_id for fn in known.values() if fn.node_id is not None}
        nodes = Node.objects.in_bulk(ids) if ids else {}
        if len(nodes) != len(ids):
            return None  # a node deleted: its FabricNode's link was cleared in the database
        for fn in known.values():
            if fn.node_id is not None:
                fn.node = nodes[fn.node_id]
        return known

    def keep(self, known: dict[str, FabricNode], tokens: dict[int, int | None]) -> None:
        """Hold these nodes for the next sweep (call after their transaction committed)."""
        if all(fn.pk is not None for fn in known.values()):
            self.known, self.tokens = known, tokens


KEPT = KeptNodes()


def fabric_nodes(
    fabric: FabricIn,
    now: datetime,
    collector: Node,
    adapters: frozenset[str] = frozenset(),
    kept: KeptNodes | None = None,
) -> tuple[dict[str, FabricNode], dict[int, int | None]]:
    """Every FabricNode, those of this sweep created or brought up to date, each switch with its Node, and each
    adapter of `adapters` (node GUIDs: those whose counters are stored) with its own; and the collectors' tokens
    after this sweep's, which gave `collector` (locked by the caller) a new one: what `kept` keeps them with."""
    tokens = dict(Node.objects.filter(kind=Node.Kind.COLLECTOR).values_list("pk", "ingest_token"))
    known = kept.take(tokens) if kept is not None else None
    if known is None:
        known = {fn.guid: fn for fn in FabricNode.objects.select_related("node")}
    collector.ingest_token = tokens[collector.pk] = rowcache.new_token()
    Node.objects.filter(pk=collector.pk).update(ingest_token=collector.ingest_token)
    full = fabric.mode == "full"
    # A switch's LID is its port 0's (a CA has one per port); a counters-only sweep says nothing of LIDs.
    lids = {fabric.nodes[r.node].guid: r.lid for r in fabric.ports if r.number == 0} if full else {}
    new, dirty = [], []
    for n in fabric.nodes:
        fn = known.get(n.guid)
        values = _node_values(n)
        if fn is None:
            fields = dict(zip(_VALUE_FIELDS, values, strict=True))
            if full:
                fields["lid"] = lids.get(n.guid)
            fn = known[n.guid] = FabricNode(guid=n.guid, first_seen_at=fabric.collected_at, **fields)
            new.append(fn)
            continue
        changed = False
        if values != _STORED(fn):
            for k, v in zip(_VALUE_FIELDS, values, strict=True):
                if getattr(fn, k) != v:
                    setattr(fn, k, v)
            changed = True
        if full:
            lid = lids.get(n.guid)
            if fn.lid != lid:
                fn.lid, changed = lid, True
            if fn.missing_since is not None:
                fn.missing_since, changed = None, True
        if changed:
            dirty.append(fn)
    if full:
        reached = {n.guid for n in fabric.nodes}
        for fn in known.values():
            if fn.guid not in reached and fn.missing_since is None:
                fn.missing_since = fabric.collected_at
                dirty.append(fn)
    _name_switches([fn for fn in known.values() if fn.node_id is None and _named(fn, adapters)])
    if new:
        FabricNode.objects.bulk_create(new)
    if dirty:
        store.update_rows(FabricNode, dirty, [*_NODE_FIELDS, "missing_since", "node"])
    return known, tokens


def _named(fn: FabricNode, adapters: frozenset[str]) -> bool:
    """Whether this node gets an inventory Node: a switch, or an adapter whose counters are stored."""
    return fn.node_type == NODE_TYPE_SWITCH or fn.guid in adapters


def _node_values(n: FabricNodeIn) -> tuple:
    """What the sweep says of the node, in _VALUE_FIELDS order."""
    return (n.node_type, n.num_ports, n.description or "", n.system_guid, n.vendor_id, n.device_id, n.revision)


def on_fabric_node_changed(sender, instance, **kwargs) -> None:
    """post_save / post_delete of a FabricNode through the ORM (not fabric ingest's own writes, which bypass it):
    every ingest process reads them afresh at its next sweep."""
    Node.objects.filter(kind=Node.Kind.COLLECTOR).update(ingest_token=None)


def _name_switches(unnamed: list[FabricNode]) -> None:
    """Give each switch (or adapter) seen for the first time an inventory Node, named from its description."""
    if not unnamed:
        return
    taken = set(Node.objects.values_list("name", flat=True))
    by_guid = {n.guid: n for n in Node.objects.filter(guid__in=[fn.guid for fn in unnamed])}
    for fn in sorted(unnamed, key=lambda f: (f.description, f.guid)):
        node = by_guid.get(fn.guid)
        if node is None:
            switch = fn.node_type == NODE_TYPE_SWITCH
            kind, fallback = (Node.Kind.SWITCH, "sw") if switch else (Node.Kind.ADAPTER, "ca")
            name = naming.switch_name(fn.description, fn.guid, taken.__contains__, fallback)
            taken.add(name)
            node = Node.objects.create(name=name, kind=kind, guid=fn.guid, first_seen_at=fn.first_seen_at)
            log.info("fabric: new %s %s (%s, %r)", kind, name, fn.guid, fn.description)
        fn.node = node
        if fn.pk is not None:
            FabricNode.objects.filter(pk=fn.pk).update(node=node)
