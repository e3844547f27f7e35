"""A switch's ports as a node snapshot of one device, `switch`, for telemetry's own apply and store: deltas,
resets, caps, samples and readings exactly as a host's ports. A counters-only sweep carries no port rows:
the ports' link state is what the last full sweep left on them. An agentless channel adapter's ports
(fabricweb.fabric.adapters) go the same way, under the device its description names, with their port GUIDs
and LIDs."""

from __future__ import annotations

import re

from collectors.facts import PHYS_STATES, PORT_STATES, SWITCH_DEVICE
from collectors.link import make_rate
from collectors.mads.pma import COUNTER_NAMES
from collectors.xmitwait import hca_type, switch_board_id
from fabricweb.telemetry.results import LinkState
from fabricweb.telemetry.storage.apply import NodeRows
from fabricweb.telemetry.storage.deltas import all_ones
from fabricweb.telemetry.validation.typed import DeviceIn, PortIn, SnapshotIn

from .schema import FabricIn, FabricNodeIn

LINK_UP = 5

# Per counter column: whether it is one of the 64-bit counters_ext/ twins, and its value stopped at all-ones.
_COLUMNS = [(name, name.endswith("_64"), all_ones(name)) for name in COUNTER_NAMES]


def counted_ports(fabric: FabricIn) -> dict[int, list[int]]:
    """Node index -> the numbers of its ports (not the management port 0) whose counters the sweep carries: made
    once a sweep, not searched for each switch (a counters-only sweep of 1,000 switches carries 64,000)."""
    counted: dict[int, list[int]] = {}
    for index, number in fabric.counters:
        if number > 0:
            counted.setdefault(index, []).append(number)
    return counted


_GUID = re.compile(r"0x[0-9a-f]{16}")  # as a sweep writes a node's GUID, in its labels (collectors.mads.model)


def errors_by_node(fabric: FabricIn) -> dict[int, list[dict[str, str]]]:
    """Node index -> the sweep's errors about it: those whose path begins with its label, `description (guid)`, or
    its GUID. Made once a sweep from the GUIDs each path names (a node's label holds its GUID), not searched for
    each switch: 20,000 errors (the sweep's cap) took seconds to search through for each of 1,000 switches."""
    out: dict[int, list[dict[str, str]]] = {}
    if not fabric.errors:  # (most sweeps: no index of the fabric's nodes made for nothing)
        return out
    index = {n.guid: i for i, n in enumerate(fabric.nodes)}
    for e in fabric.errors:
        path = e["path"]
        for guid in dict.fromkeys(_GUID.findall(path)):  # (each once, in order)
            i = index.get(guid)
            if i is not None and path.startswith((f"{fabric.nodes[i].description} ({guid})", guid)):
                out.setdefault(i, []).append(e)
    return out


def switch_snapshot(
    fabric: FabricIn,
    index: int,
    n: FabricNodeIn,
    name: str,
    readings,
    rows: NodeRows,
    counted: list[int],
    errors: list[dict[str, str]],
    device: str = SWITCH_DEVICE,
) -> SnapshotIn:
    """The node snapshot of a switch, or with `device` the adapter's device name, of an agentless adapter;
    `counted` its ports whose counters the sweep carries (counted_ports), `errors` the sweep's about it
    (errors_by_node)."""
    adapter = device != SWITCH_DEVICE
    stored = rows.ports.get(device, {})
    ports = []
    if fabric.mode == "full":
        for r in readings:
            if r.number == 0:
                continue  # the management port: its LID is the switch's, it has no cable
            gbps = None
            if r.phys_state == LINK_UP and r.speed is not None and r.lanes is not None:
                gbps = make_rate(r.speed, r.lanes).gbps
            link = (  # LinkState's fields, in its order
                r.state, PORT_STATES.get(r.state), r.phys_state, PHYS_STATES.get(r.phys_state), "InfiniBand",
                gbps, r.lanes if gbps else None, r.speed if gbps else None,
            )  # fmt: skip
            ids = (r.port_guid, r.lid) if adapter else (None, None)
            ports.append(_port_in(r.number, link, fabric.counters.get((index, r.number)), *ids))
    else:
        numbers = sorted({*counted, *stored})
        for number in numbers:
            port = stored.get(number)
            link = LinkState.of(port) if port is not None else _NO_LINK
            ids = (port.port_guid, port.lid) if adapter and port is not None else (None, None)
            ports.append(_port_in(number, link, fabric.counters.get((index, number)), *ids))
    attrs = {
        "node_type_id": n.node_type,
        "node_type_name": "CA" if adapter else "switch",
        "node_guid": n.guid,
        "sys_image_guid": n.system_guid,
        "fw_ver": None,
        # No fabric majority for switch ports: both ends' capabilities set their norm. An adapter's model is as its
        # host's driver would say it: its ports join the majority of their HCA model's ports.
        "hca_type": hca_type(n.vendor_id, n.device_id) if adapter else None,
        # NodeInfo's VendorID and DeviceID: the device id says what one PortXmitWait count is (collectors.xmitwait).
        "board_id": switch_board_id(n.vendor_id, n.device_id),
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
    source = {"sysfs_root": None, "pyverbs": f"fabric collector {fabric.collector}"}
    return SnapshotIn(
        fabric.schema, name, fabric.collected_at, fabric.ts, [DeviceIn(device, attrs, ports)], errors, source
    )


_NO_LINK = (None,) * len(LinkState._fields)


def _port_in(number: int, link: tuple, values: list[int | None] | None, guid: str | None, lid: int | None) -> PortIn:
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
        lid=lid,
        sm_lid=None,
        lmc=None,
        cap_mask=None,
        port_guid=guid,  # a switch's ports share its GUID (Node.guid): only a CA port's GUID names a port
        netdevs=[],
        counters=counters,
        counters_ext=counters_ext,
        capped=capped,
        hw_counters={},
        verbs=None,
        disagreements=[],
    )
