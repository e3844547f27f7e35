"""What only the fabric view finds, with what the database holds: the cabling against the expected topology
(added to the findings of the switch each is about), the `unreachable` event of every switch a full
sweep did not reach (fabricweb.fabric.judge words them), and a `guid_conflict` event on every host port
claiming a port GUID another host claims too."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from fabricweb.health.records import context, lifecycle
from fabricweb.health.records.events import EventBook, with_open
from fabricweb.health.rules.findings import Finding, Kind, Severity, port_key, port_label, port_target
from fabricweb.inventory.models import Node
from fabricweb.telemetry.results import STORED, IngestResult

from . import judge
from .expected import EndSpec
from .links import FabricView
from .models import ExpectedLink, FabricNode, Link
from .nodes import NODE_TYPE_SWITCH
from .schema import FabricIn


def cabling_findings(
    fabric: FabricIn, known: dict[str, FabricNode], view: FabricView, results: dict[str, IngestResult]
):
    """Cabling against the expected topology, added to the findings of the switch each is about."""
    expected = list(ExpectedLink.objects.all())
    if not expected:
        return
    switch_guid = {fn.node.name: fn.guid for fn in known.values() if fn.node is not None}
    guid_switch = {guid: name for name, guid in switch_guid.items()}
    host_guid = {}
    for end in view.ends.values():
        if end.switch is None and end.port is not None:
            d = end.port.device
            host_guid[d.node.name, d.name, end.port.number] = end.key
    pairs = []
    for row in expected:
        a = _resolve(EndSpec(row.a_node, row.a_device, row.a_port, row.a_label), switch_guid, guid_switch, host_guid)
        b = _resolve(EndSpec(row.b_node, row.b_device, row.b_port, row.b_label), switch_guid, guid_switch, host_guid)
        pairs.append((a, b))
    last_peer = {}
    for r in Link.objects.all():
        last_peer[r.a_guid, r.a_port] = (r.b_guid, r.b_port)
        last_peer[r.b_guid, r.b_port] = (r.a_guid, r.a_port)
    for switch, finding in judge.cabling(pairs, view, last_peer):
        result = results.get(switch)
        if result is not None and result.status == STORED:
            result.extra_findings.append(finding)


def _resolve(spec: EndSpec, switch_guid: dict, guid_switch: dict, host_guid: dict) -> judge.ExpectedEnd:
    if spec.device:
        return judge.ExpectedEnd(spec.label, host_guid.get((spec.node, spec.device, spec.port)), None)
    guid = spec.node if spec.node.startswith("0x") else switch_guid.get(spec.node)
    if guid is None:
        return judge.ExpectedEnd(spec.label, None, None)
    return judge.ExpectedEnd(spec.label, (guid, spec.port), guid_switch.get(guid))


def judge_absent(fabric: FabricIn, known: dict[str, FabricNode], view: FabricView, now: datetime) -> None:
    """Open, keep or update the `unreachable` event of every switch this full sweep did not reach."""
    reached = {n.guid for n in fabric.nodes}
    switches = (fn for fn in known.values() if fn.node_type == NODE_TYPE_SWITCH)
    absent = [fn for fn in switches if fn.node is not None and fn.guid not in reached]
    if not absent:
        return
    neighbours: dict[str, list[judge.Neighbour]] = defaultdict(list)
    ids = {fn.guid for fn in absent}
    for r in Link.objects.filter(gone_at=fabric.collected_at) | Link.objects.filter(gone_at__isnull=True):
        for mine, other, label in (((r.a_guid, r.a_port), (r.b_guid, r.b_port), r.b_label),
                                   ((r.b_guid, r.b_port), (r.a_guid, r.a_port), r.a_label)):  # fmt: skip
            if mine[0] in ids:
                neighbours[mine[0]].append(judge.Neighbour(label, view.ends.get(other)))
    book = EventBook.for_nodes((fn.node.pk for fn in absent), kind=Kind.UNREACHABLE)
    resolve_after = context.resolve_after()
    for fn in absent:
        finding = judge.unreachable(fn.node.name, fn.guid, neighbours.get(fn.guid, []))
        targets = {fn.node.name: (None, None)}
        actions = lifecycle.step(book.open_for(targets), [finding], frozenset(), resolve_after)
        book.apply(actions, fn.node, targets, min(fabric.collected_at, now))
    book.write()


def judge_claims(view: FabricView, now: datetime) -> None:
    """A `guid_conflict` warning on each host port claiming a GUID another host claims, saying which claim the
    fabric's view of the adapter confirms (or that it names no host); resolved once the claims are one again."""
    findings: dict[int, list[Finding]] = defaultdict(list)
    targets: dict[int, dict] = defaultdict(dict)
    nodes: dict[int, Node] = {}
    for claim in view.claims:
        labels = [port_label(p.device.node.name, p.device.name, p.number) for p in claim.ports]
        if claim.chosen is not None:
            chosen = port_label(claim.chosen.device.node.name, claim.chosen.device.name, claim.chosen.number)
            verdict = f"the fabric sees it on {claim.seen_as}, which is {chosen}"
        else:
            verdict = f"the fabric sees it on {claim.seen_as}, which confirms none: its link names no host"
        for port, label in zip(claim.ports, labels, strict=True):
            node = port.device.node
            text = f"{label}: port GUID {claim.guid} is claimed by {len(labels)} hosts ({', '.join(labels)}); {verdict}"
            key = port_key(Kind.GUID_CONFLICT, node.name, port.device.name, port.number)
            findings[node.pk].append(Finding(Kind.GUID_CONFLICT, Severity.WARNING, key, text, {"guid": claim.guid}))
            targets[node.pk][port_target(node.name, port.device.name, port.number)] = (port.device, port)
            nodes[node.pk] = node
    nodes = with_open(nodes, Kind.GUID_CONFLICT)
    if not nodes:
        return
    book = EventBook.for_nodes(nodes, kind=Kind.GUID_CONFLICT)
    for pk, node in sorted(nodes.items()):
        held = {t: (None, None) for t in book.targets_of(node.name, {Kind.GUID_CONFLICT})}
        held.update(targets.get(pk, {}))
        actions = lifecycle.step(book.open_for(held), findings.get(pk, []), frozenset(), context.resolve_after())
        book.apply(actions, node, held, now)
    book.write()
