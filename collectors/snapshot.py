"""One host's snapshot: read sysfs (and pyverbs when it loads), merge, serialise to JSON.

The JSON form is the contract between a node worker and ingest (DESIGN.md,
"Interfaces to keep stable"); bump SCHEMA_VERSION on any incompatible change.
"""

from __future__ import annotations

import socket
import time
from dataclasses import asdict
from datetime import UTC, datetime

from .model import SCHEMA_VERSION, Device, Disagreement, Port, Snapshot, VerbsPort
from .sysfs import SysfsReader


def read_host(
    sysfs_root: str = "/sys",
    host: str | None = None,
    use_verbs: bool = True,
    now: float | None = None,
) -> Snapshot:
    """Read every RDMA device of this host (or of the tree under `sysfs_root`)."""
    reader = SysfsReader(sysfs_root)
    collected_at = time.time() if now is None else now
    devices = reader.devices()
    snap = Snapshot(
        host=host or socket.gethostname().split(".")[0],
        collected_at=collected_at,
        devices=devices,
        errors=reader.errors,
        sysfs_root=sysfs_root,
    )
    if use_verbs:
        from . import verbs  # imported lazily: most callers never need it

        reading = verbs.read_verbs()
        snap.pyverbs = reading.status
        if reading.ports:
            merge_verbs(devices, reading.ports)
    return snap


def merge_verbs(devices: list[Device], verbs_ports: dict[tuple[str, int], VerbsPort]) -> None:
    """Attach verbs' view of each port, and record where it disagrees with sysfs."""
    for dev in devices:
        for port in dev.ports:
            vp = verbs_ports.get((dev.name, port.number))
            if vp is None:
                continue
            port.verbs = vp
            port.disagreements = _compare(port, vp)


def _compare(port: Port, vp: VerbsPort) -> list[Disagreement]:
    rate = port.rate
    pairs = (
        ("state", port.state.id if port.state else None, vp.state),
        ("phys_state", port.phys_state.id if port.phys_state else None, vp.phys_state),
        ("speed", rate.speed if rate else None, vp.speed),
        ("lanes", rate.lanes if rate else None, vp.lanes),
        ("link_layer", port.link_layer, vp.link_layer),
        ("lid", port.lid, vp.lid),
    )
    # A fact one side does not report is not a disagreement.
    return [Disagreement(f, s, v) for f, s, v in pairs if s is not None and v is not None and s != v]


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _port_dict(p: Port) -> dict:
    rate = p.rate
    return {
        "port": p.number,
        "state": asdict(p.state) if p.state else None,
        "phys_state": asdict(p.phys_state) if p.phys_state else None,
        "link_layer": p.link_layer,
        "rate": None
        if rate is None
        else {"gbps": rate.gbps, "lanes": rate.lanes, "speed": rate.speed, "bytes_per_second": rate.bytes_per_second},
        "lid": p.lid,
        "sm_lid": p.sm_lid,
        "lmc": p.lmc,
        "cap_mask": p.cap_mask,
        "netdevs": list(p.netdevs),
        "counters": dict(p.counters),
        "counters_ext": dict(p.counters_ext),
        "capped": list(p.capped),
        "hw_counters": dict(p.hw_counters),
        "verbs": asdict(p.verbs) if p.verbs else None,
        "disagreements": [asdict(d) for d in p.disagreements],
    }


def to_dict(snap: Snapshot) -> dict:
    """The JSON-ready snapshot (plain dicts, lists, str, int, float, None)."""
    devices = []
    for d in snap.devices:
        devices.append(
            {
                "name": d.name,
                "node_type": asdict(d.node_type) if d.node_type else None,
                "node_guid": d.node_guid,
                "sys_image_guid": d.sys_image_guid,
                "fw_ver": d.fw_ver,
                "hca_type": d.hca_type,
                "board_id": d.board_id,
                "hw_rev": d.hw_rev,
                "node_desc": d.node_desc,
                "pci": asdict(d.pci) if d.pci else None,
                "hw_counters": dict(d.hw_counters),
                "ports": [_port_dict(p) for p in d.ports],
            }
        )
    return {
        "schema": SCHEMA_VERSION,
        "host": snap.host,
        "collected_at": iso_utc(snap.collected_at),
        "source": {"sysfs_root": snap.sysfs_root, "pyverbs": snap.pyverbs},
        "devices": devices,
        "errors": [{"path": e.path, "reason": e.reason} for e in snap.errors],
    }
