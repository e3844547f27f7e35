"""Checks of a snapshot's PCIe tree (schema 2): a device's `pcie_path` and the host's `gpus`.

Both the worded checks (schema.py) and the quick path (quickparse.py) call these as they are, so the
two cannot differ. Inside, a function's or neighbour's common case is one expression and anything else
goes field by field, naming the place only then (tests/telemetry/test_telemetry_pcie_validation.py
holds the two forms to the same verdicts and values at every field's edges). A malformed value
refuses the snapshot with SnapshotRejected naming where, as any other malformed field does; a missing
optional field is unknown (None). Values are rebuilt from the keys the contract names (docs/pcie.md),
so what else a node adds is not stored.
"""

from __future__ import annotations

import re

from collectors.facts import MAX_GPUS, MAX_PCI_GTS, MAX_PCIE_HOPS, MAX_PCIE_NEIGHBOURS
from collectors.pcitopo import RELATIONS
from fabricweb.inventory.models import NAME_MAX

from .checks import SnapshotRejected, mismatch, shown
from .typed import DEVICE_RE, MAX_DEVICES

# Past them a snapshot is broken or hostile: the agent never sends more (collectors.facts).
MAX_HOPS, MAX_NEIGHBOURS = MAX_PCIE_HOPS, MAX_PCIE_NEIGHBOURS
CPULIST_MAX = 4096  # the node reader's limit on one sysfs file
PCI_ADDRESS_RE = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")  # a 32-bit domain at most
HOST_BRIDGE_RE = re.compile(r"pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}")
CPULIST_RE = re.compile(r"[0-9,-]*")  # the kernel's list form: 0-15,64-79
HOP_KINDS = ("switch port", "root port", "bridge")
NEIGHBOUR_KINDS = ("gpu", "rdma")
_IDS = ("class_code", "vendor", "device")  # 16 bits each (class_code: base class and subclass)
_SPEEDS = ("current_gts", "max_gts")  # GT/s, up to the device's own `pci` limit
_WIDTHS = ("current_width", "max_width")  # lanes


def _address(value, where: str) -> str:
    if type(value) is str and PCI_ADDRESS_RE.fullmatch(value):
        return value
    raise mismatch(where, "a PCI address such as 0000:40:01.1", value)


def _function(value, where: str, index: int) -> dict:
    """The fields a hop and a GPU share (collectors.pcimodel.PciFunction), in its order, of `where[index]`.

    The common case in one expression (about 3x faster than field by field, which a DGX's 60 hops
    feel); anything else, an integer GT/s included, goes through the worded checks."""
    if type(value) is dict:
        get = value.get
        address, class_code, vendor, device = get("address"), get("class_code"), get("vendor"), get("device")
        cur_gts, cur_width, max_gts, max_width = (
            get("current_gts"),
            get("current_width"),
            get("max_gts"),
            get("max_width"),
        )
        numa, cpus = get("numa_node"), get("local_cpulist")
        if (
            type(address) is str
            and PCI_ADDRESS_RE.fullmatch(address)
            and (class_code is None or (type(class_code) is int and 0 <= class_code <= 0xFFFF))
            and (vendor is None or (type(vendor) is int and 0 <= vendor <= 0xFFFF))
            and (device is None or (type(device) is int and 0 <= device <= 0xFFFF))
            and (cur_gts is None or (type(cur_gts) is float and 0 <= cur_gts <= MAX_PCI_GTS))
            and (cur_width is None or (type(cur_width) is int and 0 <= cur_width <= 64))
            and (max_gts is None or (type(max_gts) is float and 0 <= max_gts <= MAX_PCI_GTS))
            and (max_width is None or (type(max_width) is int and 0 <= max_width <= 64))
            and (numa is None or (type(numa) is int and 0 <= numa <= 4095))
            and (cpus is None or (type(cpus) is str and len(cpus) <= CPULIST_MAX and CPULIST_RE.fullmatch(cpus)))
        ):
            return {
                "address": address,
                "class_code": class_code,
                "vendor": vendor,
                "device": device,
                "current_gts": cur_gts,
                "current_width": cur_width,
                "max_gts": max_gts,
                "max_width": max_width,
                "numa_node": numa,
                "local_cpulist": cpus,
            }
    return _function_worded(value, f"{where}[{index}]")


def _function_worded(value, where: str) -> dict:
    if type(value) is not dict:
        raise mismatch(where, "an object", value)
    out: dict[str, object] = {"address": _address(value.get("address"), f"{where}.address")}
    for key in _IDS:
        v = value.get(key)
        if v is not None and (type(v) is not int or not 0 <= v <= 0xFFFF):
            raise mismatch(f"{where}.{key}", "null or an integer from 0 to 65535", v)
        out[key] = v
    for speed, width in zip(_SPEEDS, _WIDTHS, strict=True):
        v = value.get(speed)
        if v is not None:
            # NaN fails the range test; infinities are past MAX_PCI_GTS.
            if type(v) not in (int, float) or not 0 <= v <= MAX_PCI_GTS:
                raise mismatch(f"{where}.{speed}", f"null or a number of GT/s from 0 to {MAX_PCI_GTS:g}", v)
            v = float(v)
        out[speed] = v
        v = value.get(width)
        if v is not None and (type(v) is not int or not 0 <= v <= 64):
            raise mismatch(f"{where}.{width}", "null or a number of lanes from 0 to 64", v)
        out[width] = v
    v = value.get("numa_node")
    if v is not None and (type(v) is not int or not 0 <= v <= 4095):
        raise mismatch(f"{where}.numa_node", "null or an integer from 0 to 4095", v)
    out["numa_node"] = v
    v = value.get("local_cpulist")
    if v is not None and (type(v) is not str or len(v) > CPULIST_MAX or not CPULIST_RE.fullmatch(v)):
        raise mismatch(f"{where}.local_cpulist", f"null or a CPU list such as 0-15,64-79 (at most {CPULIST_MAX})", v)
    out["local_cpulist"] = v
    return out


def pcie_path(value, where: str) -> dict | None:
    """A device's `pcie_path` rebuilt, or None when not sent; SnapshotRejected naming where when malformed."""
    if value is None:
        return None
    if type(value) is not dict:
        raise mismatch(where, "an object or null", value)
    host_bridge = value.get("host_bridge")
    if host_bridge is not None and (type(host_bridge) is not str or not HOST_BRIDGE_RE.fullmatch(host_bridge)):
        raise mismatch(f"{where}.host_bridge", "null or a host bridge such as pci0000:40", host_bridge)
    items = value.get("hops")
    if type(items) is not list:
        raise mismatch(f"{where}.hops", "a list of bridges", items)
    if not 1 <= len(items) <= MAX_HOPS:
        raise SnapshotRejected(f"{where}.hops: {len(items)} bridges, expected 1 to {MAX_HOPS}")
    hops = []
    last = len(items) - 1
    for i, item in enumerate(items):
        hop = _function(item, f"{where}.hops", i)
        kind = item.get("kind")
        if type(kind) is not str or kind not in HOP_KINDS or (kind == "root port" and i != last):
            raise mismatch(f"{where}.hops[{i}].kind", f"one of {', '.join(HOP_KINDS)} (a root port last)", kind)
        hop["kind"] = kind
        hops.append(hop)
    on_path = {h["address"] for h in hops}
    if len(on_path) != len(hops):
        raise SnapshotRejected(f"{where}.hops: a bridge appears twice")
    items = value.get("neighbours")
    if items is not None and (type(items) is not list or len(items) > MAX_NEIGHBOURS):
        raise mismatch(f"{where}.neighbours", f"null or a list of at most {MAX_NEIGHBOURS} functions", items)
    return {
        "host_bridge": host_bridge,
        "hops": hops,
        "neighbours": [_neighbour(n, where, i, on_path) for i, n in enumerate(items or ())],
    }


def _neighbour(value, path: str, index: int, on_path: set[str]) -> dict:
    if type(value) is dict:  # the common case first, as in _function
        address, kind, name, via = value.get("address"), value.get("kind"), value.get("name"), value.get("via")
        if (
            type(address) is str
            and PCI_ADDRESS_RE.fullmatch(address)
            and type(via) is str
            and via in on_path
            and (
                (kind == "gpu" and name is None)
                or (kind == "rdma" and type(name) is str and len(name) <= NAME_MAX and DEVICE_RE.fullmatch(name))
            )
            and type(kind) is str
        ):
            return {"address": address, "kind": kind, "name": name, "via": via}
    return _neighbour_worded(value, f"{path}.neighbours[{index}]", on_path)


def _neighbour_worded(value, where: str, on_path: set[str]) -> dict:
    if type(value) is not dict:
        raise mismatch(where, "an object", value)
    address = _address(value.get("address"), f"{where}.address")
    kind, name, via = value.get("kind"), value.get("name"), value.get("via")
    if type(kind) is not str or kind not in NEIGHBOUR_KINDS:
        raise mismatch(f"{where}.kind", "gpu or rdma", kind)
    if kind == "gpu" and name is not None:
        raise mismatch(f"{where}.name", "null for a GPU", name)
    if kind == "rdma" and (type(name) is not str or len(name) > NAME_MAX or not DEVICE_RE.fullmatch(name)):
        raise mismatch(f"{where}.name", "an RDMA device's name such as mlx5_1", name)
    if type(via) is not str or via not in on_path:
        raise mismatch(f"{where}.via", "the address of one of this path's bridges", via)
    return {"address": address, "kind": kind, "name": name, "via": via}


def gpus(value, devices: set[str]) -> list[dict]:
    """The host's `gpus` rebuilt ([] when not sent: the agent leaves the key out when it found none);
    each GPU's `nics` names devices of this snapshot (`devices`)."""
    if value is None:
        return []
    if type(value) is not list or len(value) > MAX_GPUS:
        raise mismatch("gpus", f"null or a list of at most {MAX_GPUS} GPUs", value)
    out = []
    for i, item in enumerate(value):
        gpu = _function(item, "gpus", i)
        where = f"gpus[{i}]"
        nics = item.get("nics")
        if nics is None:
            nics = {}
        elif type(nics) is not dict or len(nics) > MAX_DEVICES:
            raise mismatch(f"{where}.nics", f"an object of at most {MAX_DEVICES} devices", nics)
        for name, relation in nics.items():
            if name not in devices:
                raise SnapshotRejected(f"{where}.nics names {shown(name)}, which is not a device of this snapshot")
            if type(relation) is not str or relation not in RELATIONS:
                raise mismatch(f"{where}.nics[{name!r}]", f"one of {', '.join(RELATIONS)}", relation)
        gpu["nics"] = dict(nics)
        out.append(gpu)
    if len({g["address"] for g in out}) != len(out):
        raise SnapshotRejected("gpus: a GPU appears twice")
    return out
