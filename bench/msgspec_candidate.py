"""A snapshot message read with msgspec's typed decoding: the candidate bench_read_floor.py times.

Not part of the product (msgspec is not a dependency). It reads a Celery body
`[[snapshot], {}, {}]` into the form schema.parse_snapshot returns, with the checks
telemetry/validation/quickparse.py makes on the common case, or returns None where those would
look closer. The ranges come from the same constants; what a type cannot say (known
counter names, storable text, the time) is checked after decoding.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta, Struct

from collectors.facts import KNOWN_SCHEMAS
from collectors.link import SPEED_BY_NAME, WIDTHS
from fabricweb.inventory.models import NAME_MAX, TEXT_MAX
from fabricweb.telemetry.validation import checks
from fabricweb.telemetry.validation.checks import GOOD_NAMES, MAX_COUNTERS, MAX_LIST
from fabricweb.telemetry.validation.quickparse import _DEVICE_TEXTS as DEVICE_TEXTS
from fabricweb.telemetry.validation.typed import (
    DEVICE_RE,
    HOST_RE,
    MAX_DEVICES,
    MAX_PORTS,
    MAX_PORTS_TOTAL,
    DeviceIn,
    PortIn,
    SnapshotIn,
)

# No upper bound: msgspec takes none past int64, and reads no integer past 2**64 - 1 (< MAX_COUNTER) anyway.
Counters = Annotated[dict[str, Annotated[int, Meta(ge=0)] | None], Meta(max_length=MAX_COUNTERS)]
Text = Annotated[str, Meta(max_length=TEXT_MAX)]
Short = Annotated[str, Meta(max_length=32)]
Name = Annotated[str, Meta(max_length=NAME_MAX)]


def _up_to(high: int):
    return Annotated[int, Meta(ge=0, le=high)]


class Enum(Struct):
    id: _up_to(255)
    name: Short | None = None


class Rate(Struct):
    gbps: Annotated[float, Meta(ge=0, le=100_000)]
    lanes: int | None = None
    speed: str | None = None


class Port(Struct):
    port: _up_to(255)
    state: Enum | None = None
    phys_state: Enum | None = None
    rate: Rate | None = None
    link_layer: Short | None = None
    lid: _up_to(0xFFFF) | None = None
    sm_lid: _up_to(0xFFFF) | None = None
    lmc: _up_to(7) | None = None
    cap_mask: _up_to(0xFFFFFFFF) | None = None
    netdevs: Annotated[list[Name], Meta(max_length=MAX_LIST)] | None = None
    counters: Counters | None = None
    counters_ext: Counters | None = None
    capped: Annotated[list[Name], Meta(max_length=MAX_COUNTERS)] | None = None
    hw_counters: Counters | None = None
    verbs: None = None  # (present: the quick path's own checks; not timed here)
    disagreements: Annotated[list, Meta(max_length=0)] | None = None


class Pci(Struct):
    address: Text | None = None
    current_gts: Annotated[float, Meta(ge=0, le=1024)] | None = None
    max_gts: Annotated[float, Meta(ge=0, le=1024)] | None = None
    current_width: _up_to(64) | None = None
    max_width: _up_to(64) | None = None
    numa_node: _up_to(4095) | None = None


class Device(Struct):
    name: Name
    ports: Annotated[list[Port], Meta(max_length=MAX_PORTS)]
    node_type: Enum | None = None
    node_guid: Text | None = None
    sys_image_guid: Text | None = None
    fw_ver: Text | None = None
    hca_type: Text | None = None
    board_id: Text | None = None
    hw_rev: Text | None = None
    node_desc: Text | None = None
    pci: Pci | None = None
    hw_counters: Counters | None = None
    verbs: None = None
    disagreements: Annotated[list, Meta(max_length=0)] | None = None


class Source(Struct):
    sysfs_root: Text | None = None
    pyverbs: Text | None = None


class Snapshot(Struct):
    schema: int
    host: Name
    collected_at: Annotated[str, Meta(max_length=64)]
    devices: Annotated[list[Device], Meta(max_length=MAX_DEVICES)]
    errors: Annotated[list, Meta(max_length=0)] | None = None
    source: Source | None = None


Body = tuple[tuple[Snapshot], dict, dict]


def decoder() -> msgspec.json.Decoder:
    return msgspec.json.Decoder(Body)


def parse(decoder: msgspec.json.Decoder, body: bytes, now: datetime) -> SnapshotIn | None:
    # Text a type cannot refuse: NUL and lone surrogates only come as escapes in JSON (raw bytes are UTF-8).
    if b"\\u0000" in body or b"\\ud" in body or b"\\uD" in body:
        return None
    try:
        snap = decoder.decode(body)[0][0]
    except msgspec.MsgspecError:
        return None
    if snap.schema not in KNOWN_SCHEMAS or not HOST_RE.fullmatch(snap.host):
        return None
    try:
        when = checks.collected_at(snap.collected_at, now)
    except checks.SnapshotRejected:
        return None
    devices, names, total = [], set(), 0
    for d in snap.devices:
        device = _device(d)
        if device is None or device.name in names:
            return None
        names.add(device.name)
        total += len(device.ports)
        devices.append(device)
    if total > MAX_PORTS_TOTAL:
        return None
    source = snap.source or Source()
    return SnapshotIn(
        snap.schema,
        snap.host,
        when,
        when.timestamp(),
        devices,
        [],
        {"sysfs_root": source.sysfs_root, "pyverbs": source.pyverbs},
    )


def _device(d: Device) -> DeviceIn | None:
    if not DEVICE_RE.fullmatch(d.name) or not GOOD_NAMES.issuperset(d.hw_counters or ()):
        return None
    pci, kind = d.pci or Pci(), d.node_type
    attrs = {
        "node_type_id": kind.id if kind else None,
        "node_type_name": kind.name if kind else None,
        **{key: getattr(d, key) for key in DEVICE_TEXTS},
        "pci_address": pci.address,
        "pci_current_gts": pci.current_gts,
        "pci_max_gts": pci.max_gts,
        "pci_current_width": pci.current_width,
        "pci_max_width": pci.max_width,
        "numa_node": pci.numa_node,
        "hw_counters": d.hw_counters or {},
        "verbs": None,
        "disagreements": [],
    }
    ports = []
    for p in d.ports:
        counters, ext, hw = p.counters or {}, p.counters_ext or {}, p.hw_counters or {}
        if not (GOOD_NAMES.issuperset(counters) and GOOD_NAMES.issuperset(ext) and GOOD_NAMES.issuperset(hw)):
            return None
        capped = p.capped or []
        if any(name not in counters and name not in ext for name in capped):
            return None
        state, phys, rate = p.state, p.phys_state, p.rate
        if rate and (
            (rate.lanes is not None and rate.lanes not in WIDTHS)
            or (rate.speed is not None and rate.speed not in SPEED_BY_NAME)
        ):
            return None
        ports.append(
            PortIn(
                number=p.port,
                state_id=state.id if state else None,
                state_name=state.name if state else None,
                phys_state_id=phys.id if phys else None,
                phys_state_name=phys.name if phys else None,
                link_layer=p.link_layer,
                rate_gbps=rate.gbps if rate else None,
                lanes=rate.lanes if rate else None,
                speed=rate.speed if rate else None,
                lid=p.lid,
                sm_lid=p.sm_lid,
                lmc=p.lmc,
                cap_mask=p.cap_mask,
                netdevs=p.netdevs or [],
                counters=counters,
                counters_ext=ext,
                capped=capped,
                hw_counters=hw,
                verbs=None,
                disagreements=[],
            )
        )
    if len({p.number for p in ports}) != len(ports):
        return None
    return DeviceIn(d.name, attrs, ports)
