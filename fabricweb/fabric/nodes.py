"""A sweep's nodes: every FabricNode reached, brought up to date (or missing since this sweep), and each
switch seen for the first time given an inventory Node of kind `switch` (fabricweb.fabric.naming), each
agentless adapter read for the first time one of kind `adapter` (fabricweb.fabric.adapters)."""

from __future__ import annotations

import logging
from datetime import datetime

from fabricweb.inventory.models import Node
from fabricweb.telemetry.storage import store

from . import naming
from .models import FabricNode
from .schema import FabricIn, FabricNodeIn

log = logging.getLogger("fabricweb.fabric.ingest")  # fabric ingest's log: these lines are its own

NODE_TYPE_SWITCH = 2


def fabric_nodes(fabric: FabricIn, now: datetime, adapters: frozenset[str] = frozenset()) -> dict[str, FabricNode]:
    """Every FabricNode, those of this sweep created or brought up to date, each switch with its Node, and each
    adapter of `adapters` (node GUIDs: those whose counters are stored) with its own."""
    known = {fn.guid: fn for fn in FabricNode.objects.select_related("node")}
    # A switch's LID is its port 0's (a CA has one per port); a counters-only sweep says nothing of LIDs.
    lids = {fabric.nodes[r.node].guid: r.lid for r in fabric.ports if r.number == 0}
    new, dirty = [], []
    for n in fabric.nodes:
        fn = known.get(n.guid)
        values = _node_values(n)
        if fabric.mode == "full":
            values["lid"] = lids.get(n.guid)
        if fn is None:
            fn = known[n.guid] = FabricNode(guid=n.guid, first_seen_at=fabric.collected_at, **values)
            new.append(fn)
            continue
        changed = {k: v for k, v in values.items() if getattr(fn, k) != v}
        if fn.missing_since is not None and fabric.mode == "full":
            changed["missing_since"] = None
        if changed:
            for k, v in changed.items():
                setattr(fn, k, v)
            dirty.append(fn)
    if fabric.mode == "full":
        reached = {n.guid for n in fabric.nodes}
        for fn in known.values():
            if fn.guid not in reached and fn.missing_since is None:
                fn.missing_since = fabric.collected_at
                dirty.append(fn)
    unnamed = [fn for fn in known.values() if fn.node is None]
    _name_switches([fn for fn in unnamed if fn.node_type == NODE_TYPE_SWITCH or fn.guid in adapters])
    if new:
        FabricNode.objects.bulk_create(new)
    if dirty:
        store.update_rows(FabricNode, dirty, [*_NODE_FIELDS, "missing_since", "node"])
    return known


_NODE_FIELDS = ["node_type", "num_ports", "description", "system_guid", "vendor_id", "device_id", "revision", "lid"]


def _node_values(n: FabricNodeIn) -> dict[str, object]:
    return {
        "node_type": n.node_type,
        "num_ports": n.num_ports,
        "description": n.description or "",
        "system_guid": n.system_guid,
        "vendor_id": n.vendor_id,
        "device_id": n.device_id,
        "revision": n.revision,
    }


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
