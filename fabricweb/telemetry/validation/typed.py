"""A node's snapshot in its typed form (what schema.parse_snapshot returns), and the limits it is checked
against: shared by the worded checks (schema.py) and the quick path (quickparse.py), which import this and
not each other."""

from __future__ import annotations

import re
from dataclasses import dataclass, make_dataclass
from datetime import datetime

from collectors.facts import NODE_NAME_PATTERN

from .portfields import PORT_FIELDS

# Limits that fit real hosts with room to spare (a large GPU server has 8-16 HCAs of 1-2 ports, and
# a few hundred sysfs files that could fail): a snapshot past them is broken or hostile, and is refused
# before it can cost seconds of ingest and gigabytes of memory.
MAX_DEVICES = 64
MAX_PORTS = 128  # per device
MAX_PORTS_TOTAL = 512
MAX_ERRORS = 2_000
HOST_RE = re.compile(NODE_NAME_PATTERN)
DEVICE_RE = re.compile(r"[A-Za-z0-9_.-]+")


# One port as validated: a slotted dataclass of portfields.PORT_FIELDS, in its order. Field names match
# fabricweb.inventory.models.Port, so ingest copies them by name.
PortIn = make_dataclass("PortIn", [(f.name, f.type) for f in PORT_FIELDS], slots=True)
PortIn.__module__ = __name__


@dataclass(slots=True)
class DeviceIn:
    name: str
    attrs: dict[str, object]  # fabricweb.inventory.models.Device field -> value (pcie_path: None in schema 1)
    ports: list[PortIn]
    # SR-IOV (optional in schema 1; None: not sent, or unknown). Not Device fields, so not in attrs.
    virtual_function: bool | None = None
    physical_function: str | None = None  # the PF's PCI address, for a VF
    # Its attributes as last sent (the wire form's `same`, collectors/wire.py): `attrs` holds its hw_counters
    # only, and ingest keeps what it stored of the rest.
    same: bool = False


@dataclass(slots=True)
class SnapshotIn:
    schema: int
    host: str
    collected_at: datetime
    ts: float  # collected_at in seconds since the epoch
    devices: list[DeviceIn]
    errors: list[dict[str, str]]
    source: dict[str, str | None]
    # Schema 2's `gpus` as Node.gpus stores it ([]: none); None: schema 1, which has no PCIe tree (unknown).
    gpus: list[dict] | None = None
    gpus_same: bool = False  # the GPU list as last sent (wire form): ingest keeps the node's
