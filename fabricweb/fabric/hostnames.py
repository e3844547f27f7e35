"""A switch never keeps a name a host holds: a name conflict is a finding, not a lock-out.

A switch is named from its NodeDescription (naming.py), which anyone managing the switch sets. One fake switch
describing itself as `cn099` once took that name before the host cn099 had reported, and from then on the real
host, signing with its valid key, was refused for good: "cn099 is a switch in the inventory, not a host". Now:

- a sweep never names a switch after a node that exists (naming.switch_name: the name taken, it gets its
  fallback, `cn099-<last 4 GUID digits>`);
- a host's snapshot naming a switch takes the name back (`yield_to_host`, from host ingest, before its rows are
  loaded; from an agentless adapter too, when an agent comes up on its host): the switch gets its fallback
  name, its open events' keys follow it, and everything else of it (ports, samples, links, events) is attached
  by its row, not its name; the host is stored as any other;
- at every full sweep (`judge_names`), each switch whose description gives the name of a host is a
  `name_conflict` warning on the switch, naming both, resolved when its description no longer does.

With FABRIC_NODE_AUTH required a host's snapshot is signed with the key of the name it gives (an operator made
that key for that host): the name is the host's. With it off, nothing is proven of any name anyway.
"""

from __future__ import annotations

import logging
from datetime import datetime

from fabricweb.health.models import Event
from fabricweb.health.records import context, lifecycle
from fabricweb.health.records.events import EventBook, with_open
from fabricweb.health.rules.findings import Finding, Kind, Severity, node_key
from fabricweb.inventory.models import Node

from . import naming
from .models import FabricNode

log = logging.getLogger("fabricweb.fabric.ingest")


def yield_to_host(switch: Node) -> str:
    """Rename `switch`, whose name a host's snapshot gives, to its fallback name (saved); the new name."""
    name = switch.name
    guid = switch.guid or f"0x{switch.pk:016x}"
    fallback = "ca" if switch.kind == Node.Kind.ADAPTER else "sw"
    new = naming.switch_name(name, guid, lambda n: n == name or Node.objects.filter(name=n).exists(), fallback)
    switch.name, switch.ingest_token = new, None  # every ingest process reads its rows afresh
    switch.save(update_fields=["name", "ingest_token"])
    # One open event per key, and a key names its node: the host's own events must not meet the switch's.
    for event in Event.objects.filter(node=switch, resolved_at__isnull=True):
        kind, _, target = event.key.partition(":")
        if target == name or target.startswith(f"{name}/"):
            event.key = f"{kind}:{new}{target[len(name) :]}"
            event.save(update_fields=["key"])
    log.warning("fabric: the host %s reported; the %s %s, which had taken that name, is now %s", name, switch.kind,
                guid, new)  # fmt: skip
    return new


def judge_names(known: dict[str, FabricNode], now: datetime) -> None:
    """A `name_conflict` warning on each switch whose description gives a host's name; resolved when it no
    longer does (after the usual clean sweeps)."""
    claims = {}
    for fn in known.values():
        switch = fn.node is not None and fn.node.kind == Node.Kind.SWITCH  # an adapter names its own host
        base = naming.candidate(fn.description) if switch else None
        if base is not None and base != fn.node.name:
            claims[fn.node.pk] = (fn, base)
    hosts = set()
    if claims:
        wanted = {base for _, base in claims.values()}
        hosts = set(Node.objects.filter(kind=Node.Kind.HOST, name__in=wanted).values_list("name", flat=True))
    found = {pk: claim for pk, claim in claims.items() if claim[1] in hosts}
    nodes = {pk: fn.node for pk, (fn, _) in found.items()}
    nodes = with_open(nodes, Kind.NAME_CONFLICT)
    if not nodes:
        return
    book = EventBook.for_nodes(nodes, kind=Kind.NAME_CONFLICT)
    for pk, node in sorted(nodes.items()):
        findings = []
        if pk in found:
            fn, base = found[pk]
            text = (
                f"{node.name}: switch {fn.guid} describes itself as {base}, a host's name "
                f"(its description: {fn.description[:80]!r}); the host keeps {base}, the switch is named {node.name}"
            )
            key = node_key(Kind.NAME_CONFLICT, node.name)
            findings.append(Finding(Kind.NAME_CONFLICT, Severity.WARNING, key, text, {"guid": fn.guid, "name": base}))
        targets = {node.name: (None, None)}
        actions = lifecycle.step(book.open_for(targets), findings, frozenset(), context.resolve_after())
        book.apply(actions, node, targets, now)
    book.write()
