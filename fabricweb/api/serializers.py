"""Rows to JSON-able dicts. Plain functions; the views choose the rows and the queries.

Conventions: times ISO 8601 in UTC with `Z`; units in field names (`_gbps`, `_s`,
`_bytes`, `_per_second`); unknown is null, never 0. Every fact derived from a port (up, degraded,
status, its link and how it is named) is fabricweb.inventory.portfacts'.
"""

from __future__ import annotations

from collectors.facts import IBSTAT_STATES, NODE_TYPES, PHYS_STATES, SWITCH_DEVICE
from fabricweb.fabric.models import FabricNode, Link, TopologyChange
from fabricweb.health.models import Event
from fabricweb.health.rules.findings import port_label
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.isotime import iso
from fabricweb.telemetry.history.samples import Sample
from fabricweb.telemetry.storage.columns import DELTA_COLUMNS, TRAFFIC

SEVERITIES = tuple(Event.Severity.values)


def _named(ident: int | None, stored: str | None, words: dict[int, str]) -> dict | None:
    if ident is None and stored is None:
        return None
    return {"id": ident, "name": words.get(ident, stored)}


def _link(found: portfacts.Link | None) -> dict | None:
    """A link as `4X HDR` (`100GbE` on Ethernet): total Gb/s, lanes, speed, name, bytes per second."""
    return None if found is None else found.as_dict()


def link(speed: str | None, lanes: int | None, gbps: float | None = None, link_layer: str | None = None) -> dict | None:
    """A link given by its parts (expected, capable, best): portfacts.named_link."""
    return _link(portfacts.named_link(speed, lanes, gbps, link_layer))


pcie_link = portfacts.pcie_link


def port_url(node: str, device: str, number: int) -> str:
    return f"/api/v1/ports/{node}/{device}/{number}"


def switch_url(name: str) -> str:
    return f"/api/v1/switches/{name}"


def far_end(port: Port) -> dict | None:
    """The other end of the port's cable as the fabric sweeps saw it, or None when they never did.

    `label` is always there (`leaf07 port 12`, `nfs01 mlx5_0 port 1`: untrusted text, a switch or channel
    adapter names itself); `node`, `device`, `port` and `url` only when that end is in the inventory.
    Needs `port.peer.device.node` loaded (select_related("peer__device__node")).
    """
    if not port.peer_label and port.peer_id is None:
        return None
    peer = port.peer
    if peer is None:
        return {"label": port.peer_label, "node": None, "device": None, "port": None, "url": None, "switch_url": None}
    node, device = peer.device.node.name, peer.device.name
    return {
        "label": port.peer_label,
        "node": node,
        "device": device,
        "port": peer.number,
        "url": port_url(node, device, peer.number),
        "switch_url": switch_url(node) if peer.device.node.kind == Node.Kind.SWITCH else None,
    }


def port_summary(port: Port) -> dict:
    """One port in lists. Needs `port.device.node`, `port.peer.device.node` and `status`
    (portfacts.annotate). `up` and `degraded` are null while the status is unknown (a stale node's port,
    an unreached switch's): what it last said is not its state now."""
    device, node = port.device, port.device.node
    unknown = port.status == portfacts.Status.UNKNOWN
    return {
        "node": node.name,
        "device": device.name,
        "port": port.number,
        "label": port_label(node.name, device.name, port.number),  # `cn042 mlx5_0/1`, a switch's `leaf07 port 12`
        "url": port_url(node.name, device.name, port.number),
        "hca_type": device.hca_type,
        "link_layer": port.link_layer,
        "state": _named(port.state_id, port.state_name, IBSTAT_STATES),
        "phys_state": _named(port.phys_state_id, port.phys_state_name, PHYS_STATES),
        "status": port.status,
        "up": None if unknown else port.up,
        "degraded": None if unknown else port.degraded,
        # The link it has: null without one (a DOWN/Polling port's `rate` file still prints 10 Gb/sec (4X SDR)).
        "link": _link(portfacts.link(port)),
        "expected_link": link(port.expected_speed, port.expected_lanes, None, port.link_layer),
        "expected_source": port.expected_source or None,
        # From the fabric sweeps (null for a port they never reached): the cable's other end, what both ends
        # support, and whether this end reports the link's own state (else its far end does).
        "far_end": far_end(port),
        "capable": link(port.capable_speed, port.capable_lanes, None, port.link_layer),
        "link_owner": port.link_owner,
        "last_collected_at": iso(port.last_collected_at),
        "vanished_at": iso(port.vanished_at),
    }


def port_detail(port: Port, open_events: list[Event], last_sample: Sample | None) -> dict:
    return {
        **port_summary(port),
        "lid": port.lid,
        "sm_lid": port.sm_lid,
        "lmc": port.lmc,
        "cap_mask": port.cap_mask,
        "netdevs": port.netdevs,
        "pcie": pcie_link(port.device),
        "best_link": link(port.best_speed, port.best_lanes, None, port.link_layer),
        "ever_up": port.ever_up,
        "expect_up": port.expect_up,
        "state_polls": port.state_polls,
        "missed_polls": port.missed_polls,
        "first_seen_at": iso(port.first_seen_at),
        "last_reset_at": iso(port.last_reset_at),
        # Raw, as the node read them: data counters in bytes (the snapshot's x4 applied), null when unreadable.
        "counters": port.counters,
        "counters_ext": port.counters_ext,
        "hw_counters": port.hw_counters,
        "capped": port.capped,
        "last_sample": None if last_sample is None else sample(last_sample, port.link_layer),
        "disagreements": port.disagreements,
        "open_events": [event(e) for e in open_events],
    }


def sample(s: Sample, link_layer: str | None = None) -> dict:
    """One poll of one port: deltas over `interval_s` (bytes, packets, counts; xmit_wait in ticks) and rates;
    `link` null when that poll saw none."""
    out = {
        "ts": iso(s.ts),
        "interval_s": s.interval_s,
        "state_id": s.state_id,
        "phys_state_id": s.phys_state_id,
        "link": _link(portfacts.sample_link(s.state_id, s.phys_state_id, s.speed, s.lanes, link_layer)),
        "reset": s.reset,
        "capped": s.capped,
    }
    out.update((column, getattr(s, column)) for column in DELTA_COLUMNS)
    usable = s.interval_s is not None and s.interval_s > 0
    for column in TRAFFIC:  # rcv_bytes -> rcv_bytes_per_second
        delta = getattr(s, column)
        out[f"{column}_per_second"] = delta / s.interval_s if usable and delta is not None else None
    return out


def event(e: Event, jobs: list | None = None) -> dict:
    """Needs `e.node`, `e.device` and `e.port` loaded (select_related); `jobs`, the running jobs crossing its
    link now (fabricweb.jobs.impact.jobs_for_events)."""
    device = e.device.name if e.device is not None else None
    number = e.port.number if e.port is not None else None
    return {
        "id": e.pk,
        "url": f"/api/v1/events/{e.pk}",
        "open": e.is_open,
        "severity": e.severity,
        "kind": e.kind,
        "node": e.node.name,
        "device": device,
        "port": number,
        "port_url": port_url(e.node.name, device, number) if device and number is not None else None,
        "message": e.message,
        "reason": e.reason or None,
        "opened_at": iso(e.opened_at),
        "updated_at": iso(e.updated_at),
        "resolved_at": iso(e.resolved_at),
        "clean_polls": e.clean_polls,
        "details": e.details,
        "jobs": [b.id for b in jobs or ()],
    }


def severity_counts(counts: dict[str, int]) -> dict[str, int]:
    # Every severity present: here 0 is a real count, not an unknown.
    return {s: counts.get(s, 0) for s in SEVERITIES}


def node_summary(node: Node, ports: dict[str, int], events: dict[str, int], stale: bool) -> dict:
    return {
        "name": node.name,
        "kind": node.kind,
        "url": f"/api/v1/nodes/{node.name}",
        "first_seen_at": iso(node.first_seen_at),
        "last_collected_at": iso(node.last_collected_at),
        "last_ingested_at": iso(node.last_ingested_at),
        "stale": stale,
        # Snapshots refused over the node's budget (fabricweb/telemetry/storage/budget.py): reason blank when none now.
        "refused": {
            "reason": node.refused_reason or None,
            "last_at": iso(node.refused_at),
            "snapshots": node.refused_snapshots,
        },
        # Held out of the fabric norm until an operator accepts its hardware (fabricweb/telemetry/storage/normhold.py).
        "norm_hold": {
            "reason": node.norm_hold_reason or None,
            "since": iso(node.norm_hold_since),
            "accepted_by": node.norm_accepted_by or None,
            "accepted_at": iso(node.norm_accepted_at),
        },
        "ports": port_counts(ports),
        "open_events": severity_counts(events),
        "read_error_count": len(node.read_errors),
    }


def device(d: Device, ports: list[Port]) -> dict:
    return {
        "name": d.name,
        "node_type": _named(d.node_type_id, d.node_type_name, NODE_TYPES),
        "hca_type": d.hca_type,
        "fw_ver": d.fw_ver,
        "board_id": d.board_id,
        "hw_rev": d.hw_rev,
        "node_guid": d.node_guid,
        "sys_image_guid": d.sys_image_guid,
        "node_desc": d.node_desc,  # set by root on the node: untrusted text, served as a JSON string
        "pcie": pcie_link(d),
        # Its PCIe path hop by hop, its own function first, the root port last; null when unknown (docs/api.md).
        "pcie_path": portfacts.pcie_path(d),
        "first_seen_at": iso(d.first_seen_at),
        "vanished_at": iso(d.vanished_at),
        "missed_polls": d.missed_polls,
        "disagreements": d.disagreements,
        "ports": [port_summary(p) for p in ports],
    }


def port_counts(counts: dict[str, int]) -> dict[str, int]:
    """Ports in total and by status (portfacts.STATUSES, worst first): each port counted once."""
    return {k: counts.get(k, 0) for k in ("total", *portfacts.STATUSES)}


def switch_summary(node: Node, fn: FabricNode | None, ports: dict[str, int], events: dict[str, int]) -> dict:
    """A switch (an inventory Node of kind switch) with what the sweeps know of it (`fn`, None if nothing)."""
    return {
        "name": node.name,
        "url": switch_url(node.name),
        "guid": node.guid,
        "description": fn.description if fn is not None else None,  # the switch's NodeDescription: untrusted text
        "lid": fn.lid if fn is not None else None,
        "system_guid": fn.system_guid if fn is not None else None,
        "vendor_id": fn.vendor_id if fn is not None else None,
        "device_id": fn.device_id if fn is not None else None,
        "num_ports": fn.num_ports if fn is not None else None,
        "reachable": fn is not None and fn.missing_since is None,
        "missing_since": iso(fn.missing_since) if fn is not None else None,
        "first_seen_at": iso(node.first_seen_at),
        "last_ingested_at": iso(node.last_ingested_at),
        "ports": port_counts(ports),
        "open_events": severity_counts(events),
    }


def _link_end(guid: str, number: int, label: str, port: Port | None) -> dict:
    out = {"guid": guid, "port": number, "label": label, "node": None, "device": None, "url": None, "switch_url": None}
    if port is not None:
        node, device = port.device.node, port.device.name
        out.update(node=node.name, device=device, url=port_url(node.name, device, port.number))
        if device == SWITCH_DEVICE:
            out["switch_url"] = switch_url(node.name)
    return out


def fabric_link(row: Link, jobs: list | None = None) -> dict:
    """One cable: both ends, the trained link, what both ends support, the running jobs crossing it (their ids).
    Needs the state annotation (portfacts.link_states) and `a.device.node`, `b.device.node` loaded."""
    state = row.state
    return {
        "id": row.pk,
        "a": _link_end(row.a_guid, row.a_port, row.a_label, row.a),
        "b": _link_end(row.b_guid, row.b_port, row.b_label, row.b),
        # The trained link while up (the last sweep's); null while down, unknown or gone.
        "link": link(row.speed, row.lanes) if portfacts.link_is_up(state) else None,
        "capable": link(row.capable_speed, row.capable_lanes),
        "inter_switch": row.inter_switch,
        "state": state,
        "up": portfacts.link_is_up(state),
        "degraded": None if state == "unknown" else state == "degraded",
        "first_seen_at": iso(row.first_seen_at),
        "gone_at": iso(row.gone_at),
        "jobs": [b.id for b in jobs or ()],
    }


def topology_change(row: TopologyChange) -> dict:
    return {
        "id": row.pk,
        "at": iso(row.at),
        "kind": row.kind,
        "guid": row.guid,
        "port": row.port,
        "label": row.label,
        "peer_before": row.peer_before or None,
        "peer_after": row.peer_after or None,
        "collector": row.collector,
    }
