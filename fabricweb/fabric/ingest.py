"""Store a fabric snapshot: switch ports as inventory ports, links from both ends, the topology's changes.

One transaction per sweep:

1. the collector (a Node of kind `collector`) and whether it leads: of two collectors sweeping one
   fabric, the sweeps of the one applied last are applied; the other's are recorded as standby
   until the leader has been silent for FAILOVER_POLLS poll intervals (docs/fabric.md);
2. every node reached (FabricNode), a switch getting an inventory Node of kind `switch` the first
   time (fabricweb.fabric.naming);
3. each switch's ports as a node snapshot of one device, `switch`, applied by telemetry's own
   apply and store: deltas, resets, caps, samples, readings, exactly as a host's ports;
4. the links (fabricweb.fabric.links): far end, what both ends support and which end speaks for the
   link, written to the inventory ports of both ends (a host's ports included: the next judgement
   of the host uses them); each link that appeared, went or moved is a TopologyChange;
5. the health rules on every switch port (the `snapshots_ingested` signal, as for hosts), with the
   findings only the fabric view has (fabricweb.fabric.judge): switches no longer reached, cabling.

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
from django.db.models import F
from django.utils import timezone

from collectors.fabric.pma import COUNTER_NAMES
from collectors.facts import PHYS_STATES, PORT_STATES, SWITCH_DEVICE
from collectors.link import make_rate
from fabricweb.health import context, lifecycle
from fabricweb.health.events import EventBook
from fabricweb.health.findings import Kind
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry import partitions, rowcache, store
from fabricweb.telemetry.apply import Changes, NodeRows, apply_snapshot
from fabricweb.telemetry.checks import SnapshotRejected
from fabricweb.telemetry.deltas import all_ones
from fabricweb.telemetry.ingest import BatchResult, Rejection
from fabricweb.telemetry.results import STORED, IngestResult
from fabricweb.telemetry.signals import snapshots_ingested
from fabricweb.telemetry.typed import DeviceIn, PortIn, SnapshotIn

from . import judge, naming
from .expected import EndSpec
from .links import FACT_FIELDS, EndKey, FabricView, facts_for
from .models import ExpectedLink, FabricNode, Link, Sweep, TopologyChange
from .schema import FabricIn, FabricNodeIn, parse_fabric

log = logging.getLogger(__name__)

FAILOVER_POLLS = 3
NODE_TYPE_SWITCH = 2
LINK_UP = 5
MAX_ERRORS_KEPT = 200  # of a sweep's errors, on its Sweep row (the count is kept whole)
_CHUNK = 500  # GUIDs per IN (...) query: SQLite caps a statement's parameters

# Per counter column: whether it is one of the 64-bit counters_ext/ twins, and its value stopped at all-ones.
_COLUMNS = [(name, name.endswith("_64"), all_ones(name)) for name in COUNTER_NAMES]


@dataclass(slots=True)
class FabricResult:
    collector: str
    collected_at: datetime
    status: str  # stored, standby, duplicate, refused
    note: str = ""
    switches: int = 0
    ports: int = 0
    links: int = 0
    changes: int = 0  # topology changes recorded
    samples_written: int = 0
    results: list[IngestResult] = field(default_factory=list)

    def summary(self) -> str:
        head = f"fabric sweep of {self.collector} at {self.collected_at:%Y-%m-%dT%H:%M:%S}Z"
        if self.status != STORED:
            return f"{head}: {self.status}" + (f" ({self.note})" if self.note else "")
        return (
            f"{head}: {self.switches} switches, {self.ports} switch ports, {self.links} links, "
            f"{self.changes} topology changes"
        )


def ingest_fabric(data: object, *, now: datetime | None = None) -> FabricResult:
    """Validate and store one fabric snapshot in one transaction; SnapshotRejected when it is malformed."""
    now = now or timezone.now()
    fabric = parse_fabric(data, now)
    cache = None if transaction.get_connection().in_atomic_block else rowcache.CACHE
    with transaction.atomic():
        partitions.SAMPLES.ensure([fabric.collected_at])  # before any row lock, as host ingest does
        result, rows = _store(fabric, now, cache)
    if cache is not None and rows:
        cache.keep(rows.values())  # committed: as this process wrote them
    return result


def _store(fabric: FabricIn, now: datetime, cache) -> tuple[FabricResult, dict[str, NodeRows]]:
    result = FabricResult(fabric.collector, fabric.collected_at, STORED)
    collector = _collector(fabric, now)
    if collector.kind != Node.Kind.COLLECTOR:
        result.status, result.note = "refused", f"{collector.name} is a {collector.kind}, not a fabric collector"
        return result, {}
    not_applied = _not_applied(collector, fabric, now)
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
        result.status, result.note = ("duplicate" if "already" in not_applied else "standby"), not_applied
        return result, {}

    known = _fabric_nodes(fabric, now)
    switches = {i: known[n.guid] for i, n in enumerate(fabric.nodes) if n.node_type == NODE_TYPE_SWITCH}
    rows = store.load_nodes({fn.node.name: fabric.collected_at for fn in switches.values()}, cache)
    by_node = defaultdict(list)
    for reading in fabric.ports:
        by_node[reading.node].append(reading)
    changes = Changes()
    results: dict[str, IngestResult] = {}
    for index, fn in switches.items():
        node_rows = rows[fn.node.name]
        snap = _switch_snapshot(fabric, index, fabric.nodes[index], fn.node.name, by_node.get(index, []), node_rows)
        results[fn.node.name] = apply_snapshot(snap, node_rows, changes, now, kind=Node.Kind.SWITCH)
    store.write(changes)

    if fabric.mode == "full":
        view = _links(fabric, known, rows, now, result)
        _findings(fabric, known, view, results)
        sweep.links = len(view.links)
    stored = [r for r in results.values() if r.status == STORED]
    if stored:
        snapshots_ingested.send(sender=IngestResult, results=stored)
    if fabric.mode == "full":
        _judge_absent(fabric, known, view, now)
    sweep.save()
    result.switches = len(switches)
    result.ports = sum(r.ports_ingested for r in results.values())
    result.samples_written = sum(r.samples_written for r in results.values())
    result.links = sweep.links
    result.results = list(results.values())
    return result, rows


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
        if fabric.collected_at <= last.collected_at:
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


# --- nodes -------------------------------------------------------------------------------------


def _fabric_nodes(fabric: FabricIn, now: datetime) -> dict[str, FabricNode]:
    """Every FabricNode, those of this sweep created or brought up to date, each switch with its Node."""
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
    _name_switches([fn for fn in known.values() if fn.node_type == NODE_TYPE_SWITCH and fn.node is None])
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
    """Give each switch seen for the first time an inventory Node, named from its description."""
    if not unnamed:
        return
    taken = set(Node.objects.values_list("name", flat=True))
    by_guid = {n.guid: n for n in Node.objects.filter(guid__in=[fn.guid for fn in unnamed])}
    for fn in sorted(unnamed, key=lambda f: (f.description, f.guid)):
        node = by_guid.get(fn.guid)
        if node is None:
            name = naming.switch_name(fn.description, fn.guid, taken.__contains__)
            taken.add(name)
            node = Node.objects.create(name=name, kind=Node.Kind.SWITCH, guid=fn.guid, first_seen_at=fn.first_seen_at)
            log.info("fabric: new switch %s (%s, %r)", name, fn.guid, fn.description)
        fn.node = node
        if fn.pk is not None:
            FabricNode.objects.filter(pk=fn.pk).update(node=node)


# --- switch ports as a node snapshot ------------------------------------------------------------


def _switch_snapshot(fabric: FabricIn, index: int, n: FabricNodeIn, name: str, readings, rows: NodeRows) -> SnapshotIn:
    stored = rows.ports.get(SWITCH_DEVICE, {})
    ports = []
    if fabric.mode == "full":
        for r in readings:
            if r.number == 0:
                continue  # the management port: its LID is the switch's, it has no cable
            gbps = None
            if r.phys_state == LINK_UP and r.speed is not None and r.lanes is not None:
                gbps = make_rate(r.speed, r.lanes).gbps
            link = (
                r.state, PORT_STATES.get(r.state), r.phys_state, PHYS_STATES.get(r.phys_state), "InfiniBand",
                gbps, r.lanes if gbps else None, r.speed if gbps else None,
            )  # fmt: skip
            ports.append(_port_in(r.number, link, fabric.counters.get((index, r.number))))
    else:
        numbers = sorted({number for (i, number) in fabric.counters if i == index and number > 0} | set(stored))
        for number in numbers:
            port = stored.get(number)
            link = tuple(getattr(port, f) for f in _LINK_STATE) if port is not None else (None,) * 8
            ports.append(_port_in(number, link, fabric.counters.get((index, number))))
    attrs = {
        "node_type_id": n.node_type,
        "node_type_name": "switch",
        "node_guid": n.guid,
        "sys_image_guid": n.system_guid,
        "fw_ver": None,
        "hca_type": None,  # no fabric majority for switch ports: both ends' capabilities set their norm
        "board_id": None if n.vendor_id is None else f"vendor 0x{n.vendor_id:06x} device 0x{n.device_id or 0:04x}",
        "hw_rev": None if n.revision is None else f"0x{n.revision:x}",
        "node_desc": n.description,
        "pci_address": None,
        "pci_current_gts": None,
        "pci_max_gts": None,
        "pci_current_width": None,
        "pci_max_width": None,
        "numa_node": None,
        "hw_counters": {},
        "verbs": None,
        "disagreements": [],
    }
    errors = [e for e in fabric.errors if e["path"].startswith((f"{n.description} ({n.guid})", n.guid))]
    source = {"sysfs_root": None, "pyverbs": f"fabric collector {fabric.collector}"}
    return SnapshotIn(
        fabric.schema, name, fabric.collected_at, fabric.ts, [DeviceIn(SWITCH_DEVICE, attrs, ports)], errors, source
    )


_LINK_STATE = (
    "state_id", "state_name", "phys_state_id", "phys_state_name", "link_layer", "rate_gbps", "lanes", "speed",
)  # fmt: skip


def _port_in(number: int, link: tuple, values: list[int | None] | None) -> PortIn:
    counters: dict[str, int | None] = {}
    counters_ext: dict[str, int | None] = {}
    capped: list[str] = []
    if values is not None:
        for (name, ext, top), value in zip(_COLUMNS, values, strict=True):
            if value is None:
                continue
            (counters_ext if ext else counters)[name] = value
            if value == top:
                capped.append(name)
    state_id, state_name, phys_id, phys_name, link_layer, gbps, lanes, speed = link
    return PortIn(
        number=number,
        state_id=state_id,
        state_name=state_name,
        phys_state_id=phys_id,
        phys_state_name=phys_name,
        link_layer=link_layer,
        rate_gbps=gbps,
        lanes=lanes,
        speed=speed,
        lid=None,
        sm_lid=None,
        lmc=None,
        cap_mask=None,
        port_guid=None,  # a switch's ports share its GUID (Node.guid): only a CA port's GUID names a port
        netdevs=[],
        counters=counters,
        counters_ext=counters_ext,
        capped=capped,
        hw_counters={},
        verbs=None,
        disagreements=[],
    )


# --- links ---------------------------------------------------------------------------------------


def _host_ports(fabric: FabricIn) -> dict[str, Port]:
    """The hosts' inventory ports the sweep's channel adapters are, by port GUID."""
    guids = sorted(
        {r.port_guid for r in fabric.ports if r.port_guid and fabric.nodes[r.node].node_type != NODE_TYPE_SWITCH}
    )
    out: dict[str, Port] = {}
    for start in range(0, len(guids), _CHUNK):
        chunk = guids[start : start + _CHUNK]
        query = Port.objects.filter(port_guid__in=chunk, device__node__kind=Node.Kind.HOST)
        present_first = F("vanished_at").asc(nulls_first=True)
        for port in query.select_related("device__node").order_by(present_first):
            out.setdefault(port.port_guid, port)  # a port present before one that vanished
    return out


def _links(
    fabric: FabricIn, known: dict[str, FabricNode], rows: dict[str, NodeRows], now: datetime, result: FabricResult
) -> FabricView:
    names = {fn.guid: fn.node.name for fn in known.values() if fn.node is not None}
    switch_ports = {}
    for fn in known.values():
        node_rows = rows.get(fn.node.name) if fn.node is not None else None
        if node_rows is not None:
            for number, port in node_rows.ports.get(SWITCH_DEVICE, {}).items():
                switch_ports[fn.guid, number] = port
    host_ports = _host_ports(fabric)
    view = FabricView(fabric, names, host_ports, switch_ports)
    dirty_switch, dirty_host = [], []
    for end in view.ends.values():
        if end.port is None:
            continue
        facts = facts_for(view, end)
        if facts is None or not facts.differs(end.port):
            continue
        facts.set_on(end.port)
        (dirty_switch if end.switch is not None else dirty_host).append(end.port)
    if dirty_switch or dirty_host:
        store.update_rows(Port, dirty_switch + dirty_host, FACT_FIELDS)
    if dirty_host:
        # The hosts' rows changed outside their own ingest: no ingest process may reuse what it holds.
        rowcache.invalidate({p.device.node_id for p in dirty_host})
    result.changes = _topology(fabric, view, now)
    return view


def _topology(fabric: FabricIn, view: FabricView, now: datetime) -> int:
    """Bring the Link rows in line with this sweep and record what changed; the number of changes."""
    rows = {(r.a_guid, r.a_port, r.b_guid, r.b_port): r for r in Link.objects.all()}
    current = {(a[0], a[1], b[0], b[1]): link for (a, b), link in view.links.items()}
    first_sweep = not rows
    reached = {n.guid for n in fabric.nodes}
    at = fabric.collected_at
    live = {k: r for k, r in rows.items() if r.gone_at is None}
    gone = [r for k, r in live.items() if k not in current and (r.a_guid in reached or r.b_guid in reached)]
    old_peer: dict[EndKey, tuple[Link, str]] = {}
    for r in gone:
        old_peer[r.a_guid, r.a_port] = (r, r.b_label)
        old_peer[r.b_guid, r.b_port] = (r, r.a_label)
    records: list[TopologyChange] = []
    moved: set[int] = set()
    new_rows, dirty = [], []
    for key, link in current.items():
        row = rows.get(key)
        values = {
            "a_label": link.a.label[:256],
            "b_label": link.b.label[:256],
            "a_id": link.a.port.pk if link.a.port is not None else None,
            "b_id": link.b.port.pk if link.b.port is not None else None,
            "speed": link.a.reading.speed,
            "lanes": link.a.reading.lanes,
            "capable_speed": link.capable.speed if link.capable else None,
            "capable_lanes": link.capable.lanes if link.capable else None,
            "inter_switch": link.inter_switch,
        }
        if row is None:
            row = Link(a_guid=key[0], a_port=key[1], b_guid=key[2], b_port=key[3], first_seen_at=at, **values)
            new_rows.append(row)
        elif row.gone_at is not None or any(getattr(row, k) != v for k, v in values.items()):
            if row.gone_at is not None:
                row.gone_at, row.first_seen_at = None, at
            for k, v in values.items():
                setattr(row, k, v)
            dirty.append(row)
        else:
            continue
        if first_sweep or (key in live):
            continue
        # Did one end of this new link have another cable a moment ago? Then it moved.
        for end, other in ((link.a, link.b), (link.b, link.a)):
            before = old_peer.get(end.key)
            if before is not None and before[0].pk not in moved:
                moved.add(before[0].pk)
                records.append(_change(TopologyChange.Kind.MOVED, end.key, end.label, before[1], other.label, fabric))
                break
        else:
            records.append(_change(TopologyChange.Kind.APPEARED, link.a.key, link.a.label, "", link.b.label, fabric))
    for r in gone:
        r.gone_at = at
        dirty.append(r)
        if r.pk not in moved:
            records.append(
                _change(TopologyChange.Kind.DISAPPEARED, (r.a_guid, r.a_port), r.a_label, r.b_label, "", fabric)
            )
    if new_rows:
        Link.objects.bulk_create(new_rows)
    if dirty:
        store.update_rows(Link, dirty, [*_LINK_FIELDS, "gone_at", "first_seen_at"])
    if records:
        TopologyChange.objects.bulk_create(records)
        for change in records[:20]:
            log.info("fabric: %s", change)
    return len(records)


_LINK_FIELDS = ["a_label", "b_label", "a", "b", "speed", "lanes", "capable_speed", "capable_lanes", "inter_switch"]


def _change(kind, key: EndKey, label: str, before: str, after: str, fabric: FabricIn) -> TopologyChange:
    return TopologyChange(
        at=fabric.collected_at,
        kind=kind,
        guid=key[0],
        port=key[1],
        label=label[:256],
        peer_before=before[:256],
        peer_after=after[:256],
        collector=fabric.collector,
    )


# --- what only the fabric view finds ------------------------------------------------------------


def _findings(fabric: FabricIn, known: dict[str, FabricNode], view: FabricView, results: dict[str, IngestResult]):
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


def _judge_absent(fabric: FabricIn, known: dict[str, FabricNode], view: FabricView, now: datetime) -> None:
    """Open, keep or update the `unreachable` event of every switch this full sweep did not reach."""
    reached = {n.guid for n in fabric.nodes}
    absent = [fn for fn in known.values() if fn.node is not None and fn.guid not in reached]
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
