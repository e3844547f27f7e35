"""Validation of a node's JSON snapshot (collectors.snapshot.to_dict, schema 1 or 2) into typed values.

Everything a node sends is checked before anything is stored: the schema version,
the type and range of every field ingest reads, and that every string can be stored
(PostgreSQL refuses NUL characters and unpaired surrogates, in text and in jsonb).
The first problem found raises SnapshotRejected naming where it is; nothing else
escapes. Keys this server does not know are ignored, so a newer collector can add
fields within the same schema version; a missing optional key reads as "unknown".
Schema 2 adds the PCIe tree (pcie.py); in a schema-1 snapshot it is unknown, whatever it holds.
"""

from __future__ import annotations

from datetime import datetime

from collectors.facts import KNOWN_SCHEMAS, MAX_PCI_GTS
from fabricweb.inventory.models import NAME_MAX

from . import checks, pcie
from .checks import SnapshotRejected
from .portfields import COUNTERS, DISAGREEMENTS, FIELD, GUID, INTEGER, NAMES, PORT_FIELDS, SCALARS, TEXT
from .quickparse import parse_common
from .typed import (
    DEVICE_RE,
    HOST_RE,
    MAX_DEVICES,
    MAX_ERRORS,
    MAX_PORTS,
    MAX_PORTS_TOTAL,
    DeviceIn,
    PortIn,
    SnapshotIn,
)

__all__ = ["KNOWN_SCHEMAS", "DeviceIn", "PortIn", "SnapshotIn", "SnapshotRejected", "parse_snapshot", "parse_worded"]


def parse_snapshot(data, now: datetime) -> SnapshotIn:
    """Check a decoded snapshot and return its typed form; raise SnapshotRejected on the first problem.

    `now` is this server's clock, to refuse times from a node whose clock is far ahead.
    """
    parsed = parse_common(data, now)  # a valid snapshot, checked without naming each field
    return parsed if parsed is not None else parse_worded(data, now)


def parse_worded(data, now: datetime) -> SnapshotIn:
    """parse_snapshot's checks, each naming its field: the reason of a rejection comes from here."""
    if type(data) is not dict:
        raise SnapshotRejected(f"expected a JSON object, got {type(data).__name__}")
    # The host first, so that every rejection can say which node sent it.
    host = data.get("host")
    named = host if type(host) is str and len(host) <= NAME_MAX and HOST_RE.fullmatch(host) else None
    schema = data.get("schema")
    if type(schema) is not int or schema not in KNOWN_SCHEMAS:
        known = ", ".join(map(str, sorted(KNOWN_SCHEMAS)))
        raise SnapshotRejected(f"unknown schema version {checks.shown(schema)} (this server reads {known})", named)
    if named is None:
        checks.text(host, "host", NAME_MAX, optional=False)
        raise SnapshotRejected(f"host {host!r} is not a host name (letters, digits, '-', '_', '.')")
    try:
        when = checks.collected_at(data.get("collected_at"), now)
        devices = checks.sequence(data.get("devices"), "devices", MAX_DEVICES, optional=False)
        ports = sum(len(d["ports"]) for d in devices if type(d) is dict and type(d.get("ports")) is list)
        if ports > MAX_PORTS_TOTAL:
            raise SnapshotRejected(f"devices: {ports} ports in all, more than the {MAX_PORTS_TOTAL} a host has")
        tree = schema >= 2
        parsed = [_device(d, f"devices[{i}]", tree) for i, d in enumerate(devices)]
        seen: set[str] = set()
        for d in parsed:
            if d.name in seen:
                raise SnapshotRejected(f"device {d.name} appears twice")
            seen.add(d.name)
        errors = checks.sequence(data.get("errors"), "errors", MAX_ERRORS)
        errors = [_error(e, f"errors[{i}]") for i, e in enumerate(errors)]
        source = checks.mapping(data.get("source"), "source", optional=True)
        src = {k: checks.text(source.get(k), f"source.{k}") for k in ("sysfs_root", "pyverbs")}
        gpus_same = data.get("gpus_same")
        if gpus_same is not None and gpus_same is not True:
            raise checks.mismatch("gpus_same", "true or nothing", gpus_same)
        gpus = pcie.gpus(data.get("gpus"), seen) if tree and not gpus_same else None
    except SnapshotRejected as e:
        e.host = host
        raise
    return SnapshotIn(schema, host, when, when.timestamp(), parsed, errors, src, gpus, bool(gpus_same))


def _error(value, where: str) -> dict[str, str]:
    d = checks.mapping(value, where)
    return {
        "path": checks.text(d.get("path"), f"{where}.path", 1024, optional=False),
        "reason": checks.text(d.get("reason"), f"{where}.reason", 512, optional=False),
    }


def _device(value, where: str, tree: bool) -> DeviceIn:
    d = checks.mapping(value, where)
    name = checks.text(d.get("name"), f"{where}.name", NAME_MAX, optional=False)
    if not DEVICE_RE.fullmatch(name):
        raise SnapshotRejected(f"{where}.name: {name!r} is not a device name")
    where = f"device {name}"
    same = d.get("same")
    if same is not None and same is not True:
        raise checks.mismatch(f"{where}.same", "true or nothing", same)
    if same:  # its attributes as last sent (the wire form): only its per-poll fields
        hw = checks.counters(d.get("hw_counters"), f"{where}.hw_counters")
        return DeviceIn(name, {"hw_counters": hw}, _ports(d, where), same=True)
    node_type_id, node_type_name = checks.enum(d.get("node_type"), f"{where}.node_type")
    attrs: dict[str, object] = {"node_type_id": node_type_id, "node_type_name": node_type_name}
    for key in ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "hw_rev", "node_desc"):
        attrs[key] = checks.text(d.get(key), f"{where}.{key}")
    pci = d.get("pci")
    pci = checks.mapping(pci, f"{where}.pci") if pci is not None else {}
    attrs["pci_address"] = checks.text(pci.get("address"), f"{where}.pci.address")
    for key in ("current_gts", "max_gts"):
        attrs[f"pci_{key}"] = checks.number(pci.get(key), f"{where}.pci.{key}", MAX_PCI_GTS)
    for key in ("current_width", "max_width"):
        attrs[f"pci_{key}"] = checks.integer(pci.get(key), f"{where}.pci.{key}", 0, 64)
    attrs["numa_node"] = checks.integer(pci.get("numa_node"), f"{where}.pci.numa_node", 0, 4095)
    attrs["pcie_path"] = pcie.pcie_path(d.get("pcie_path"), f"{where}.pcie_path") if tree else None
    attrs["hw_counters"] = checks.counters(d.get("hw_counters"), f"{where}.hw_counters")
    attrs["verbs"] = checks.scalars(d.get("verbs"), f"{where}.verbs")
    attrs["disagreements"] = checks.disagreements(d.get("disagreements"), f"{where}.disagreements")
    virtual_function = d.get("virtual_function")
    if virtual_function is not None and type(virtual_function) is not bool:
        raise checks.mismatch(f"{where}.virtual_function", "true, false or null", virtual_function)
    physical_function = checks.text(d.get("physical_function"), f"{where}.physical_function")
    return DeviceIn(name, attrs, _ports(d, where), virtual_function, physical_function)


def _ports(d: dict, where: str) -> list[PortIn]:
    ports = checks.sequence(d.get("ports"), f"{where}.ports", MAX_PORTS, optional=False)
    parsed = [_port(p, where, i) for i, p in enumerate(ports)]
    if len({p.number for p in parsed}) != len(parsed):
        raise SnapshotRejected(f"{where}: a port number appears twice")
    return parsed


def _port(value, device: str, index: int) -> PortIn:
    where = f"{device} ports[{index}]"
    d = checks.mapping(value, where)
    number = checks.integer(d.get("port"), f"{where}.port", *FIELD["number"].bounds, optional=False)
    where = f"{device}/{number}"  # e.g. "device mlx5_0/1", as an operator names the port
    state_id, state_name = checks.enum(d.get("state"), f"{where}.state")
    phys_id, phys_name = checks.enum(d.get("phys_state"), f"{where}.phys_state")
    gbps = lanes = speed = None
    rate = d.get("rate")
    if rate is not None:
        rate = checks.mapping(rate, f"{where}.rate")
        gbps = checks.number(rate.get("gbps"), f"{where}.rate.gbps", *FIELD["rate_gbps"].bounds, optional=False)
        lanes, widths = rate.get("lanes"), FIELD["lanes"].bounds
        if lanes is not None and (type(lanes) is not int or lanes not in widths):
            raise checks.mismatch(f"{where}.rate.lanes", f"null or one of {widths}", lanes)
        speed, speeds = rate.get("speed"), FIELD["speed"].bounds
        if speed is not None and (type(speed) is not str or speed not in speeds):
            raise checks.mismatch(f"{where}.rate.speed", f"null or one of {', '.join(speeds)}", speed)
    counters = checks.counters(d.get("counters"), f"{where}.counters")
    counters_ext = checks.counters(d.get("counters_ext"), f"{where}.counters_ext")
    capped = checks.names(d.get("capped"), f"{where}.capped", *FIELD["capped"].bounds)
    for name in capped:
        if name not in counters and name not in counters_ext:
            raise SnapshotRejected(f"{where}.capped names {name!r}, which is not among its counters")
    # The rest, each a key of its own, checked in the table's order as its row says.
    rest = {f.name: _CHECK[f.check](d.get(f.wire), f"{where}.{f.wire}", *f.bounds) for f in _REST}
    return PortIn(
        number=number,
        state_id=state_id,
        state_name=state_name,
        phys_state_id=phys_id,
        phys_state_name=phys_name,
        rate_gbps=gbps,
        lanes=lanes,
        speed=speed,
        counters=counters,
        counters_ext=counters_ext,
        capped=capped,
        **rest,
    )


# How the worded checks check a field of each kind (portfields.py), named by where it is, within its bounds.
_CHECK = {
    INTEGER: checks.integer,
    TEXT: checks.text,
    GUID: checks.guid,
    NAMES: checks.names,
    COUNTERS: checks.counters,
    SCALARS: checks.scalars,
    DISAGREEMENTS: checks.disagreements,
}
# Checked above: the port's number, its two enums, its rate, its counters and which of them are capped.
_ABOVE = ("port", "state", "phys_state", "rate", "counters", "counters_ext", "capped")
_REST = tuple(f for f in PORT_FIELDS if f.wire.split(".")[0] not in _ABOVE)
