"""Store a fabric snapshot: switch ports as inventory ports, links from both ends, the topology's changes.

One transaction per sweep:

1. the collector (a Node of kind `collector`) and whether it leads: of two collectors sweeping one
   fabric, the sweeps of the one applied last are applied; the other's are recorded as standby
   until the leader has been silent for FAILOVER_POLLS poll intervals (docs/fabric.md);
2. every node reached (FabricNode), a switch getting an inventory Node of kind `switch` the first
   time (fabricweb.fabric.naming): nodes.py;
3. each switch's ports as a node snapshot of one device, `switch`, applied by telemetry's own
   apply and store: deltas, resets, caps, samples, readings, exactly as a host's ports: switchports.py;
   each agentless channel adapter whose counters the sweep carries the same way (adapters.py);
4. the links (fabricweb.fabric.links): far end, what both ends support and which end speaks for the
   link, written to the inventory ports of both ends (a host's ports included: the next judgement
   of the host uses them); each link that appeared, went or moved is a TopologyChange: linkstore.py;
5. the health rules on every switch port (the `snapshots_ingested` signal, as for hosts), with the
   findings only the fabric view has (fabricweb.fabric.judge): switches no longer reached, cabling:
   viewfindings.py.

A counters-only snapshot (mode "counters") carries no port rows: the switches' links stay as
the last full sweep left them, and only counters, samples and counter rules move.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabricweb.inventory.models import Node
from fabricweb.telemetry.ingest import BatchResult, Rejection
from fabricweb.telemetry.results import STORED, IngestResult
from fabricweb.telemetry.signals import snapshots_ingested
from fabricweb.telemetry.storage import partitions, rowcache, store
from fabricweb.telemetry.storage.apply import Changes, NodeRows, apply_snapshot
from fabricweb.telemetry.validation.auth import unknown_collector
from fabricweb.telemetry.validation.checks import SnapshotRejected

from . import adapters, growth, naming
from .hostnames import judge_names
from .linkstore import store_links
from .models import Sweep
from .nodes import KEPT, NODE_TYPE_SWITCH, KeptNodes, fabric_nodes
from .refusals import ALREADY, clear_refused, judge_refused
from .routestore import store_routes
from .schema import FabricIn, parse_fabric
from .switchports import counted_ports, errors_by_node, switch_snapshot
from .viewfindings import cabling_findings, judge_absent, judge_claims

log = logging.getLogger(__name__)

FAILOVER_POLLS = 3
MAX_ERRORS_KEPT = 200  # of a sweep's errors, on its Sweep row (the count is kept whole)


@dataclass(slots=True)
class FabricResult:
    collector: str
    collected_at: datetime
    status: str  # stored, standby, duplicate, held (fabricweb.fabric.growth), refused
    note: str = ""
    switches: int = 0
    adapters: int = 0  # agentless channel adapters whose ports were stored
    ports: int = 0
    links: int = 0
    changes: int = 0  # topology changes recorded
    routes: int = 0  # switches whose forwarding tables were stored
    samples_written: int = 0
    results: list[IngestResult] = field(default_factory=list)

    def summary(self) -> str:
        head = f"fabric sweep of {self.collector} at {self.collected_at:%Y-%m-%dT%H:%M:%S}Z"
        if self.status != STORED:
            return f"{head}: {self.status}" + (f" ({self.note})" if self.note else "")
        adapters = f", {self.adapters} agentless adapters" if self.adapters else ""
        return (
            f"{head}: {self.switches} switches{adapters}, {self.ports} ports, {self.links} links, "
            f"{self.changes} topology changes"
        )


def ingest_fabric(data: object, *, now: datetime | None = None) -> FabricResult:
    """Validate and store one fabric snapshot in one transaction; SnapshotRejected when it is malformed."""
    now = now or timezone.now()
    # By its name alone, before its text is walked: a collector no operator named costs nothing more.
    unknown = unknown_collector(data.get("collector") if isinstance(data, dict) else None)
    if unknown:
        raise SnapshotRejected(unknown)
    fabric = parse_fabric(data, now)
    # Kept even inside an enclosing transaction, as host ingest keeps them: one that rolls back later takes the
    # nodes' and collectors' tokens back with it (telemetry/storage/rowcache.py).
    with transaction.atomic():
        partitions.SAMPLES.ensure([fabric.collected_at])  # before any row lock, as host ingest does
        result, rows, swept = _store(fabric, now, rowcache.CACHE, KEPT)
    if rows:
        rowcache.CACHE.keep(rows.values())  # as this process wrote them
    if swept is not None:
        KEPT.keep(*swept)
    return result


def _store(
    fabric: FabricIn, now: datetime, cache, kept: KeptNodes | None
) -> tuple[FabricResult, dict[str, NodeRows], tuple | None]:
    """The sweep stored; the node rows it wrote and (every FabricNode, the collectors' tokens) when it was applied."""
    result = FabricResult(fabric.collector, fabric.collected_at, STORED)
    collector = _collector(fabric, now)
    if collector.kind != Node.Kind.COLLECTOR:
        result.status, result.note = "refused", f"{collector.name} is a {collector.kind}, not a fabric collector"
        return result, {}, None
    not_applied = _not_applied(collector, fabric, now)
    if not_applied is None:
        held = growth.over_budget(collector, fabric)
        not_applied = growth.hold(collector, held, now) if held else None
    collector.last_collected_at = max(fabric.collected_at, collector.last_collected_at or fabric.collected_at)
    collector.last_ingested_at = now
    collector.stale = False
    collector.read_errors = fabric.errors[:MAX_ERRORS_KEPT]
    collector.source = {"mode": fabric.mode, "duration_s": fabric.duration_s, "queries": fabric.queries}
    collector.save(update_fields=["last_collected_at", "last_ingested_at", "stale", "read_errors", "source"])
    sweep = Sweep(
        collector=collector,
        collected_at=fabric.collected_at,
        stored_at=now,
        mode=fabric.mode,
        duration_s=fabric.duration_s or 0.0,
        queries=fabric.queries or 0,
        nodes=len(fabric.nodes),
        switches=sum(1 for n in fabric.nodes if n.node_type == NODE_TYPE_SWITCH),
        ports=len(fabric.ports) or len(fabric.counters),
        links=0,
        errors=fabric.errors[:MAX_ERRORS_KEPT],
        applied=not_applied is None,
        note=not_applied or "",
    )
    if not_applied is not None:
        sweep.save()
        status = "held" if not_applied.startswith(growth.HELD) else "duplicate" if ALREADY in not_applied else "standby"
        result.status, result.note = status, not_applied
        if status == "duplicate":
            judge_refused(collector, now)
        return result, {}, None
    clear_refused(collector, now)

    # The adapters whose counters the sweep carries and no host agent reports (adapters.py): stored as switches are.
    counted = {fabric.nodes[i].guid for i, _ in fabric.counters if fabric.nodes[i].node_type != NODE_TYPE_SWITCH}
    agentless = frozenset(adapters.readable(counted)) if counted else frozenset()
    known, tokens = fabric_nodes(fabric, now, collector, agentless, kept)
    switches = {i: known[n.guid] for i, n in enumerate(fabric.nodes) if n.node_type == NODE_TYPE_SWITCH}
    cas = {i: known[n.guid] for i, n in enumerate(fabric.nodes) if n.guid in agentless}
    rows = store.load_nodes({fn.node.name: fabric.collected_at for fn in (*switches.values(), *cas.values())}, cache)
    by_node = defaultdict(list)
    for reading in fabric.ports:
        by_node[reading.node].append(reading)
    counted, errors = counted_ports(fabric), errors_by_node(fabric)
    changes = Changes()
    results: dict[str, IngestResult] = {}
    for index, fn in switches.items():
        node_rows, n = rows[fn.node.name], fabric.nodes[index]
        readings, numbers = by_node.get(index, []), counted.get(index, [])
        snap = switch_snapshot(fabric, index, n, fn.node.name, readings, node_rows, numbers, errors.get(index, []))
        results[fn.node.name] = apply_snapshot(snap, node_rows, changes, now, kind=Node.Kind.SWITCH)
    for index, fn in cas.items():
        n, node_rows = fabric.nodes[index], rows[fn.node.name]
        device = naming.device_name(n.description)
        readings, numbers, own = by_node.get(index, []), counted.get(index, []), errors.get(index, [])
        snap = switch_snapshot(fabric, index, n, fn.node.name, readings, node_rows, numbers, own, device)
        results[fn.node.name] = apply_snapshot(snap, node_rows, changes, now, kind=Node.Kind.ADAPTER)
    store.write(changes)

    if fabric.mode == "full":
        view, result.changes = store_links(fabric, known, rows, now)
        cabling_findings(fabric, known, view, results)
        judge_claims(view, min(fabric.collected_at, now))
        judge_names(known, min(fabric.collected_at, now))
        sweep.links = len(view.links)
        result.routes = store_routes(fabric, known)
    stored = [r for r in results.values() if r.status == STORED]
    if stored:
        snapshots_ingested.send(sender=IngestResult, results=stored)
    if fabric.mode == "full":
        judge_absent(fabric, known, view, now)
    sweep.save()
    result.switches, result.adapters = len(switches), len(cas)
    result.ports = sum(r.ports_ingested for r in results.values())
    result.samples_written = sum(r.samples_written for r in results.values())
    result.links = sweep.links
    result.results = list(results.values())
    return result, rows, (known, tokens)


# --- the collector and who leads -------------------------------------------------------------


def _collector(fabric: FabricIn, now: datetime) -> Node:
    Node.objects.bulk_create(
        [Node(name=fabric.collector, kind=Node.Kind.COLLECTOR, first_seen_at=fabric.collected_at)],
        ignore_conflicts=True,
    )
    return Node.objects.select_for_update().get(name=fabric.collector)


def _not_applied(collector: Node, fabric: FabricIn, now: datetime) -> str | None:
    """Why this sweep is not applied (another collector leads; this one is not newer), or None."""
    last = Sweep.objects.filter(applied=True).select_related("collector").order_by("-stored_at").first()
    if last is None:
        return None
    if last.collector_id == collector.pk:
        # Ordered as a host's snapshots are (telemetry.storage.apply.classify): by the collector's dates, except
        # that after a sweep dated ahead of its own arrival here (the collector's clock ran fast), one dated after
        # that arrival is applied: no sweep sent before it can be, and the fabric view is not frozen until the
        # real time catches up with the fast date.
        arrived = last.stored_at
        if fabric.collected_at <= last.collected_at and not (last.collected_at > arrived < fabric.collected_at):
            return f"already applied a sweep of {collector.name} at or after {fabric.collected_at:%H:%M:%S}"
        return None
    failover = timedelta(seconds=FAILOVER_POLLS * float(settings.FABRIC_POLL_INTERVAL))
    if now - last.stored_at < failover:
        return f"standby: {last.collector.name} leads (its last sweep was applied at {last.stored_at:%H:%M:%S})"
    log.warning(
        "fabric: %s takes over from %s, whose last sweep was applied at %s",
        collector.name,
        last.collector.name,
        last.stored_at,
    )
    return None


def ingest_fabric_batch(snapshots: list) -> BatchResult:
    """ingest_fabric for each sweep, as telemetry's BatchResult (what the ingest consumer reports and acks by)."""
    out = BatchResult()
    for i, data in enumerate(snapshots):
        try:
            fabric = ingest_fabric(data)
        except SnapshotRejected as e:
            out.rejected.append(Rejection(i, e))
            continue
        log.log(
            logging.INFO if fabric.changes or fabric.status != STORED else logging.DEBUG, "ingest: %s", fabric.summary()
        )
        out.results.extend(fabric.results)
    return out
