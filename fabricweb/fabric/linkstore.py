"""A full sweep's links, stored: far end, what both ends support and which end speaks for the link on the
inventory ports of both ends (a host's ports included: the next judgement of the host uses them), and
the Link rows brought in line with the sweep, each link that appeared, went or moved a TopologyChange."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F

from collectors.facts import SWITCH_DEVICE, parse_guid
from fabricweb.inventory import rowwrites
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.storage import store
from fabricweb.telemetry.storage.apply import NodeRows

from .links import FACT_FIELDS, EndKey, FabricView, facts_for
from .models import FabricNode, Link, TopologyChange
from .naming import candidate
from .nodes import NODE_TYPE_SWITCH
from .schema import FabricIn

log = logging.getLogger("fabricweb.fabric.ingest")  # fabric ingest's log: these lines are its own

_CHUNK = 500  # GUIDs per IN (...) query: SQLite caps a statement's parameters


@dataclass(frozen=True, slots=True)
class GuidClaim:
    """A port GUID that ports of more than one host claim: a copied GUID (a compromised or misconfigured host)."""

    guid: str
    ports: tuple[Port, ...]  # every present host port claiming it
    chosen: Port | None  # the one the fabric's own view of the adapter confirms, or None
    seen_as: str  # the adapter the sweep saw with that port GUID: its description and node GUID


def same_guid(sysfs: str | None, fabric: str) -> bool:
    """A device's node GUID as sysfs writes it (`0c42:a103:00bc:f003`) against the fabric's (`0x0c42a10300bcf003`)."""
    guid = parse_guid(sysfs)
    return guid is not None and guid == parse_guid(fabric)


def _host_ports(fabric: FabricIn) -> tuple[dict[str, Port], list[GuidClaim]]:
    """The hosts' inventory ports the sweep's channel adapters are, by port GUID, and the GUIDs several hosts
    claim. Of such a GUID's claims, the one whose device has the adapter's node GUID and whose host the
    adapter's description names (rdma-core's `<hostname> <device>`) is it; when not exactly one does, the GUID
    names no host at all: a host that copies another's GUID can never take over its switch port's far end."""
    adapters = {
        r.port_guid: fabric.nodes[r.node]
        for r in fabric.ports
        if r.port_guid and fabric.nodes[r.node].node_type != NODE_TYPE_SWITCH
    }
    guids = sorted(adapters)
    claims: dict[str, list[Port]] = {}
    for start in range(0, len(guids), _CHUNK):
        chunk = guids[start : start + _CHUNK]
        query = Port.objects.filter(port_guid__in=chunk, device__node__kind=Node.Kind.HOST)
        present_first = F("vanished_at").asc(nulls_first=True)
        for port in query.select_related("device__node").order_by(present_first, "pk"):
            claims.setdefault(port.port_guid, []).append(port)
    out: dict[str, Port] = {}
    conflicts: list[GuidClaim] = []
    for guid, ports in claims.items():
        present = [p for p in ports if p.vanished_at is None]
        hosts = {p.device.node_id for p in present}
        if len(hosts) <= 1:
            out[guid] = ports[0]  # a port present before one that vanished
            continue
        ca = adapters[guid]
        confirmed = [
            p
            for p in present
            if same_guid(p.device.node_guid, ca.guid) and candidate(ca.description) == p.device.node.name
        ]
        chosen = confirmed[0] if len(confirmed) == 1 else None
        if chosen is not None:
            out[guid] = chosen
        conflicts.append(GuidClaim(guid, tuple(present), chosen, f"{ca.description or '?'} ({ca.guid})"))
    return out, conflicts


def store_links(
    fabric: FabricIn, known: dict[str, FabricNode], rows: dict[str, NodeRows], now: datetime
) -> tuple[FabricView, int]:
    """The sweep's view of the links, with its facts written to the ports of both ends and its Link rows and
    topology changes stored; and how many changes were recorded."""
    names = {fn.guid: fn.node.name for fn in known.values() if fn.node is not None}
    switch_ports = {}
    for fn in known.values():
        node_rows = rows.get(fn.node.name) if fn.node is not None else None
        if node_rows is not None:
            for number, port in node_rows.ports.get(SWITCH_DEVICE, {}).items():
                switch_ports[fn.guid, number] = port
    host_ports, view_conflicts = _host_ports(fabric)
    # An agentless adapter's ports (adapters.py), stored by this sweep, are ends as a host's are: where no host
    # claims their port GUIDs.
    own = {node_rows.node.pk for node_rows in rows.values()}
    for fn in known.values():
        node_rows = rows.get(fn.node.name) if fn.node is not None and fn.node.kind == Node.Kind.ADAPTER else None
        for ports in node_rows.ports.values() if node_rows is not None else ():
            for port in ports.values():
                if port.port_guid:
                    host_ports.setdefault(port.port_guid, port)
    view = FabricView(fabric, names, host_ports, switch_ports)
    view.claims = view_conflicts
    dirty_switch, dirty_host = [], []
    for end in view.ends.values():
        if end.port is None:
            continue
        facts = facts_for(view, end)
        if facts is None or not facts.differs(end.port):
            continue
        facts.set_on(end.port)
        # Ports of this sweep's own nodes (switches, adapters) are in its rows; a host's are not.
        (dirty_switch if end.port.device.node_id in own else dirty_host).append(end.port)
    if dirty_switch or dirty_host:
        store.update_rows(Port, dirty_switch + dirty_host, FACT_FIELDS)
    if dirty_host:
        # The hosts' rows changed outside their own ingest: no ingest process may reuse what it holds.
        rowwrites.invalidate({p.device.node_id for p in dirty_host})
    return view, _topology(fabric, view, now)


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
