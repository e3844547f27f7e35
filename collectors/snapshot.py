"""One host's snapshot: read sysfs (and pyverbs when it loads), merge, serialise to JSON.

The JSON form is the contract between a node worker and ingest (DESIGN.md,
"Interfaces to keep stable"); bump SCHEMA_VERSION on any incompatible change.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import fields
from datetime import UTC, datetime
from functools import cache

from . import roce
from .facts import SCHEMA_VERSION
from .keptdevices import KeptDevices
from .model import Device, Disagreement, Port, Snapshot, VerbsDevice, VerbsPort
from .pcipath import read_paths
from .sysfs import SysfsReader


def read_host(
    sysfs_root: str = "/sys",
    host: str | None = None,
    use_verbs: bool = True,
    now: float | None = None,
    *,
    hw_counters: bool = True,
    virtual_functions: bool = True,
    deadline: float | None = None,
    kept: KeptDevices | None = None,
) -> Snapshot:
    """Read every RDMA device of this host (or of the tree under `sysfs_root`).

    `hw_counters=False` skips every hw_counters/ directory; `virtual_functions=False` leaves out
    SR-IOV virtual functions; past `deadline` (time.monotonic()) the read stops with
    sysfs.DeadlinePassed (SysfsReader). `kept`: what of each device does not change while it stays
    registered, from an earlier read of the same caller (collectors/keptdevices.py).
    """
    reader = SysfsReader(
        sysfs_root, hw_counters=hw_counters, virtual_functions=virtual_functions, deadline=deadline, kept=kept
    )
    collected_at = time.time() if now is None else now
    devices = reader.devices()
    # A RoCE port's lossless counters: its netdev's ethtool statistics from the kernel on this machine's /sys.
    roce.read_ports(reader, devices, kernel=os.path.realpath(sysfs_root) == "/sys")
    # The bridges above the devices: their files held open between polls, as the devices' are (heldfiles.py).
    reader.held = kept.bridges if kept is not None else None
    try:
        _, gpus = read_paths(reader, devices)
    finally:
        reader.held = None
    if kept is not None:
        kept.bridges.prune()
    snap = Snapshot(
        host=host or socket.gethostname().split(".")[0],
        collected_at=collected_at,
        devices=devices,
        errors=reader.errors,
        sysfs_root=sysfs_root,
        gpus=gpus,
    )
    if use_verbs:
        from . import verbs  # imported lazily: most callers never need it

        reading = verbs.read_verbs()
        snap.pyverbs = reading.status
        snap.errors.extend(reading.errors)
        merge_verbs(devices, reading.ports, reading.devices)
    return snap


def merge_verbs(
    devices: list[Device],
    verbs_ports: dict[tuple[str, int], VerbsPort],
    verbs_devices: dict[str, VerbsDevice] | None = None,
) -> None:
    """Attach verbs' view of each device and port, and record where it disagrees with sysfs.

    Facts only verbs knows (MTU, vendor ids) travel in `verbs`; facts both report are
    compared, and a difference becomes a Disagreement naming both values.
    """
    for dev in devices:
        vd = (verbs_devices or {}).get(dev.name)
        if vd is not None:
            dev.verbs = vd
            dev.disagreements = _compare_device(dev, vd)
        for port in dev.ports:
            vp = verbs_ports.get((dev.name, port.number))
            if vp is None:
                continue
            port.verbs = vp
            port.disagreements = _compare(port, vp)


def _differ(pairs) -> list[Disagreement]:
    # A fact one side does not report is not a disagreement.
    return [
        Disagreement(name, s, v) for name, s, v, key in pairs if s is not None and v is not None and key(s) != key(v)
    ]


def _same(value):
    return value


def _fw_key(text: str):
    # libibverbs and providers pad the last part differently ("1.27.0" in sysfs,
    # "1.27.000" from ibv_query_device): compare the numbers, not the text.
    parts = text.strip().split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else text.strip()


def _compare_device(dev: Device, vd: VerbsDevice) -> list[Disagreement]:
    return _differ(
        (
            ("fw_ver", dev.fw_ver, vd.fw_ver, _fw_key),
            ("node_guid", dev.node_guid, vd.node_guid, str.lower),
            ("sys_image_guid", dev.sys_image_guid, vd.sys_image_guid, str.lower),
        )
    )


def _compare(port: Port, vp: VerbsPort) -> list[Disagreement]:
    rate = port.rate
    return _differ(
        (
            ("state", port.state.id if port.state else None, vp.state, _same),
            ("phys_state", port.phys_state.id if port.phys_state else None, vp.phys_state, _same),
            ("speed", rate.speed if rate else None, vp.speed, _same),
            ("lanes", rate.lanes if rate else None, vp.lanes, _same),
            ("link_layer", port.link_layer, vp.link_layer, _same),
            ("lid", port.lid, vp.lid, _same),
            ("sm_lid", port.sm_lid, vp.sm_lid, _same),
        )
    )


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _flat(value) -> dict:
    """asdict() of a dataclass whose fields hold scalars (Enum, PciLink, the verbs views, Disagreement, a PCIe hop
    or neighbour), without asdict's recursion and deep copy of every value: to_dict runs at every poll, and asdict
    was its largest part."""
    return {name: getattr(value, name) for name in _field_names(type(value))}


def _port_dict(p: Port) -> dict:
    rate = p.rate
    return {
        "port": p.number,
        "state": _flat(p.state) if p.state else None,
        "phys_state": _flat(p.phys_state) if p.phys_state else None,
        "link_layer": p.link_layer,
        "rate": None
        if rate is None
        else {"gbps": rate.gbps, "lanes": rate.lanes, "speed": rate.speed, "bytes_per_second": rate.bytes_per_second},
        "lid": p.lid,
        "sm_lid": p.sm_lid,
        "lmc": p.lmc,
        "cap_mask": p.cap_mask,
        "port_guid": p.port_guid,
        "netdevs": list(p.netdevs),
        "counters": dict(p.counters),
        "counters_ext": dict(p.counters_ext),
        "capped": list(p.capped),
        # On a RoCE port also its lossless counters, ethtool statistics as `ethtool.<name>` (collectors/roce.py).
        "hw_counters": {**p.hw_counters, **p.lossless.counters()} if p.lossless else dict(p.hw_counters),
        "verbs": _flat(p.verbs) if p.verbs else None,
        "disagreements": [_flat(d) for d in p.disagreements],
    }


def to_dict(snap: Snapshot) -> dict:
    """The JSON-ready snapshot (plain dicts, lists, str, int, float, None)."""
    devices = []
    for d in snap.devices:
        devices.append(
            {
                "name": d.name,
                "node_type": _flat(d.node_type) if d.node_type else None,
                "node_guid": d.node_guid,
                "sys_image_guid": d.sys_image_guid,
                "fw_ver": d.fw_ver,
                "hca_type": d.hca_type,
                "board_id": d.board_id,
                "hw_rev": d.hw_rev,
                "node_desc": d.node_desc,
                "pci": _flat(d.pci) if d.pci else None,
                # Optional within schema 1: a reader that does not know them ignores them.
                "virtual_function": d.virtual_function,
                "physical_function": d.physical_function,
                "hw_counters": dict(d.hw_counters),
                "verbs": _flat(d.verbs) if d.verbs else None,
                "disagreements": [_flat(x) for x in d.disagreements],
                "ports": [_port_dict(p) for p in d.ports],
            }
        )
        # Schema 2 (optional, like the keys above); absent: unknown, or no bridge above the function.
        if d.pcie_path is not None and len(d.pcie_path.hops) > 1:
            devices[-1]["pcie_path"] = _path_dict(d.pcie_path)
    out = {
        "schema": SCHEMA_VERSION,
        "host": snap.host,
        "collected_at": iso_utc(snap.collected_at),
        "source": {"sysfs_root": snap.sysfs_root, "pyverbs": snap.pyverbs},
        "devices": devices,
        "errors": [{"path": e.path, "reason": e.reason} for e in snap.errors],
    }
    if snap.gpus:  # schema 2; absent: no GPU found (ingest stores [])
        out["gpus"] = [{**_flat(g), "nics": dict(g.nics)} for g in snap.gpus]
    return out


def _path_dict(path) -> dict:
    # The hops above the function, nearest first: the function's own link is `pci` already.
    return {
        "host_bridge": path.host_bridge,
        "hops": [_flat(h) for h in path.hops[1:]],
        "neighbours": [_flat(n) for n in path.neighbours],
    }
