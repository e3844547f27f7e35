"""The common case of schema.parse_snapshot, checked without wording a reason.

parse_snapshot spends most of its time naming where each field is (`device mlx5_0/1.lid`), in
case it is wrong; almost no snapshot is. This module applies the same checks to a snapshot
inline and returns its typed form, or None as soon as anything is not certainly valid; the
caller then runs the worded checks, which find the problem and say what it is. It must
never accept what the worded checks refuse, nor return other values or types:
tests/telemetry/test_telemetry_quickparse.py compares the two on random snapshots.

Limits and rules are the worded checks' own (checks.py, typed.py, a port's from portfields.py); the less common parts
(verbs views, disagreements, capped counters, read errors, the PCIe tree of pcie.py) go through
those functions themselves, with no place named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from collectors.facts import KNOWN_SCHEMAS, MAX_PCI_GTS, PHYS_STATES, PORT_STATES
from collectors.wire import AS_LAST_SENT, PORT_LINK_FIELDS, rate_of
from fabricweb.inventory.models import NAME_MAX, TEXT_MAX

from . import checks, pcie
from .checks import ENUM_ID_HIGH, ENUM_NAME_MAX, GOOD_NAMES, GUID_RE, MAX_COUNTER, MAX_COUNTERS, MAX_LIST, storable
from .portfields import FIELD
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

_DEVICE_TEXTS = ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "hw_rev", "node_desc")
# A port's bounds and allowed values, from its fields' table (portfields.py), looked up once here.
_NUMBER_HIGH = FIELD["number"].bounds[1]
_PORT_INT_HIGHS = tuple(FIELD[name].bounds[1] for name in ("lid", "sm_lid", "lmc", "cap_mask"))  # each from 0
_GBPS_HIGH = FIELD["rate_gbps"].bounds[0]
_LANES = frozenset(FIELD["lanes"].bounds)
_SPEEDS = frozenset(FIELD["speed"].bounds)
# A wire 3 link's [speed, lanes] -> its Gb/s, as the long way types it (collectors.wire.rate_of, then the checks).
_SHORT_RATES = {
    (speed, lanes): float(gbps)
    for speed in _SPEEDS
    for lanes in _LANES
    if (gbps := rate_of(speed, lanes)["gbps"]) <= _GBPS_HIGH
}
_LINK_LAYER_MAX = FIELD["link_layer"].bounds[0]
_NETDEVS_MAX = FIELD["netdevs"].bounds[0]
_CAPPED_MAX = FIELD["capped"].bounds[0]
_NOWHERE = ""  # the place a worded check would name: not needed, its reason is never shown


class _Doubt(Exception):
    """Something not certainly valid: the worded checks decide."""


def parse_common(data, now: datetime) -> SnapshotIn | None:
    """`data` as parse_snapshot returns it, or None where parse_snapshot must look closer."""
    try:
        return snapshot(data, now)
    except Exception:  # _Doubt, a worded check's SnapshotRejected, or anything odd: the worded checks decide
        return None


def snapshot(data, now: datetime, device: Callable[[object, bool], DeviceIn] | None = None) -> SnapshotIn:
    """parse_common's work, raising on a doubt; `device(d, tree)` types each device (the wire form's: quickwire)."""
    device = device or device_in
    if type(data) is not dict:
        raise _Doubt
    host, schema = data.get("host"), data.get("schema")
    if type(schema) is not int or schema not in KNOWN_SCHEMAS:
        raise _Doubt
    if type(host) is not str or len(host) > NAME_MAX or not HOST_RE.fullmatch(host):
        raise _Doubt
    when = checks.collected_at(data.get("collected_at"), now)
    devices = data.get("devices")
    if type(devices) is not list or len(devices) > MAX_DEVICES:
        raise _Doubt
    parsed = []
    ports = 0
    tree = schema >= 2
    for d in devices:
        dev = device(d, tree)
        ports += len(dev.ports)
        parsed.append(dev)
    if ports > MAX_PORTS_TOTAL or len({d.name for d in parsed}) != len(parsed):
        raise _Doubt
    errors = data.get("errors")
    if errors is None or (type(errors) is list and not errors):
        errors = []
    else:
        errors = [checks.mapping(e, _NOWHERE) for e in checks.sequence(errors, _NOWHERE, MAX_ERRORS)]
        errors = [{"path": _text(e.get("path"), 1024), "reason": _text(e.get("reason"), 512)} for e in errors]
    source = data.get("source")
    if source is None:
        source = {}
    elif type(source) is not dict:
        raise _Doubt
    src = {k: _optional_text(source.get(k), TEXT_MAX) for k in ("sysfs_root", "pyverbs")}
    gpus_same = data.get("gpus_same")
    if gpus_same is not None and gpus_same is not True:
        raise _Doubt
    gpus = pcie.gpus(data.get("gpus"), {d.name for d in parsed}) if tree and not gpus_same else None
    return SnapshotIn(schema, host, when, when.timestamp(), parsed, errors, src, gpus, bool(gpus_same))


# Texts: ASCII without NUL is storable, and isascii() reads a flag; checks.storable() decides the rest.
# Written out in each function (no call per check): texts are a third of a snapshot's fields.


def _text(value, limit: int) -> str:
    if type(value) is str and len(value) <= limit and ((value.isascii() and "\x00" not in value) or storable(value)):
        return value
    raise _Doubt


def _optional_text(value, limit: int) -> str | None:
    if value is None or (
        type(value) is str and len(value) <= limit and ((value.isascii() and "\x00" not in value) or storable(value))
    ):
        return value
    raise _Doubt


def _optional_int(value, low: int, high: int) -> int | None:
    if value is not None and (type(value) is not int or not low <= value <= high):
        raise _Doubt
    return value


def _optional_number(value, high: float) -> float | None:
    if value is None:
        return None
    # NaN fails the range test; infinities are past `high`.
    if type(value) not in (int, float) or not 0 <= value <= high:
        raise _Doubt
    return float(value)


def _enum(value) -> tuple[int | None, str | None]:
    if value is None:
        return None, None
    if type(value) is not dict:
        raise _Doubt
    ident = value.get("id")
    if type(ident) is not int or not 0 <= ident <= ENUM_ID_HIGH:
        raise _Doubt
    return ident, _optional_text(value.get("name"), ENUM_NAME_MAX)


def _counters(value) -> Mapping[str, int | None]:
    if value is None:
        return {}
    if value is AS_LAST_SENT:  # (a port's hw_counters read back from the wire form: checks.counters)
        return value
    if type(value) is not dict or len(value) > MAX_COUNTERS:
        raise _Doubt
    # A name the worded checks have not passed yet is left to them (they learn it).
    if not GOOD_NAMES.issuperset(value):
        raise _Doubt
    for v in value.values():
        if (type(v) is not int or not 0 <= v <= MAX_COUNTER) and v is not None:
            raise _Doubt
    return value


def _names(value, limit: int = MAX_LIST) -> list[str]:
    if value is None:
        return []
    if type(value) is not list or len(value) > limit:
        raise _Doubt
    for item in value:
        _text(item, NAME_MAX)
    return value


def device_in(d, tree: bool, ports: Callable[[dict], list[PortIn]] | None = None) -> DeviceIn:
    """A device of schema 2; `ports(d)` types its ports (the wire form's: quickwire)."""
    ports = ports or ports_in
    if type(d) is not dict:
        raise _Doubt
    name = _text(d.get("name"), NAME_MAX)
    if not DEVICE_RE.fullmatch(name):
        raise _Doubt
    same = d.get("same")
    if same is not None and same is not True:
        raise _Doubt
    if same:  # its attributes as last sent (the wire form): only its per-poll fields
        return DeviceIn(name, {"hw_counters": _counters(d.get("hw_counters"))}, ports(d), same=True)
    node_type_id, node_type_name = _enum(d.get("node_type"))
    attrs: dict[str, object] = {"node_type_id": node_type_id, "node_type_name": node_type_name}
    for key in _DEVICE_TEXTS:
        attrs[key] = _optional_text(d.get(key), TEXT_MAX)
    pci = d.get("pci")
    if pci is None:
        pci = {}
    elif type(pci) is not dict:
        raise _Doubt
    attrs["pci_address"] = _optional_text(pci.get("address"), TEXT_MAX)
    attrs["pci_current_gts"] = _optional_number(pci.get("current_gts"), MAX_PCI_GTS)
    attrs["pci_max_gts"] = _optional_number(pci.get("max_gts"), MAX_PCI_GTS)
    attrs["pci_current_width"] = _optional_int(pci.get("current_width"), 0, 64)
    attrs["pci_max_width"] = _optional_int(pci.get("max_width"), 0, 64)
    attrs["numa_node"] = _optional_int(pci.get("numa_node"), 0, 4095)
    attrs["pcie_path"] = pcie.pcie_path(d.get("pcie_path"), _NOWHERE) if tree else None
    attrs["hw_counters"] = _counters(d.get("hw_counters"))
    attrs["verbs"] = _verbs(d.get("verbs"))
    attrs["disagreements"] = _disagreements(d.get("disagreements"))
    parsed = ports(d)
    virtual_function = d.get("virtual_function")
    if virtual_function is not None and type(virtual_function) is not bool:
        raise _Doubt
    return DeviceIn(name, attrs, parsed, virtual_function, _optional_text(d.get("physical_function"), TEXT_MAX))


def ports_in(d: dict, port: Callable[[object], PortIn] | None = None) -> list[PortIn]:
    ports = d.get("ports")
    if type(ports) is not list or len(ports) > MAX_PORTS:
        raise _Doubt
    typed = port or _port
    parsed = [typed(p) for p in ports]
    if len(parsed) > 1 and len({p.number for p in parsed}) != len(parsed):
        raise _Doubt
    return parsed


def _verbs(value) -> dict | None:
    return None if value is None else checks.scalars(value, _NOWHERE)


def _disagreements(value) -> list[dict]:
    return [] if value is None or (type(value) is list and not value) else checks.disagreements(value, _NOWHERE)


def _port(p) -> PortIn:
    if type(p) is not dict:
        raise _Doubt
    return port_in(
        p.get("port"),
        list(map(p.get, PORT_LINK_FIELDS)),
        _counters(p.get("counters")),
        _counters(p.get("counters_ext")),
        _counters(p.get("hw_counters")),
    )


def port_in(number, link: list, counters: dict, counters_ext: dict, hw_counters: dict, short: bool = False) -> PortIn:
    """A port's checks and typed form from its number, its `link` values in the wire form's order
    (collectors.wire.PORT_LINK_FIELDS: state ... disagreements) and its counters, checked already (_counters).
    `short`: a wire 3 link, whose states may be their ids alone and its rate [speed, lanes] (collectors/wire.py)."""
    state, phys_state, link_layer, rate, lid, sm_lid, lmc, cap_mask, port_guid, netdevs, capped, verbs, agree = link
    if type(number) is not int or not 0 <= number <= _NUMBER_HIGH:
        raise _Doubt
    if short and type(state) is int:
        state_id, state_name = state, PORT_STATES[state]  # (KeyError: not a state wire 3 gives by its id)
    else:
        state_id, state_name = _enum(state)
    if short and type(phys_state) is int:
        phys_id, phys_name = phys_state, PHYS_STATES[phys_state]
    else:
        phys_id, phys_name = _enum(phys_state)
    gbps = lanes = speed = None
    if short and type(rate) is list:
        if len(rate) != 2 or type(rate[1]) is not int or type(rate[0]) is not str:
            raise _Doubt
        speed, lanes = rate
        gbps = _SHORT_RATES[speed, lanes]  # (KeyError: not a rate the long way reads either)
    elif rate is not None:
        if type(rate) is not dict:
            raise _Doubt
        gbps = _optional_number(rate.get("gbps"), _GBPS_HIGH)
        lanes, speed = rate.get("lanes"), rate.get("speed")
        if gbps is None:
            raise _Doubt
        if lanes is not None and (type(lanes) is not int or lanes not in _LANES):
            raise _Doubt
        if speed is not None and (type(speed) is not str or speed not in _SPEEDS):
            raise _Doubt
    lid_high, sm_lid_high, lmc_high, cap_mask_high = _PORT_INT_HIGHS  # (written out: a loop cost ~0.3 µs a port)
    if (
        (lid is not None and (type(lid) is not int or not 0 <= lid <= lid_high))
        or (sm_lid is not None and (type(sm_lid) is not int or not 0 <= sm_lid <= sm_lid_high))
        or (lmc is not None and (type(lmc) is not int or not 0 <= lmc <= lmc_high))
        or (cap_mask is not None and (type(cap_mask) is not int or not 0 <= cap_mask <= cap_mask_high))
    ):
        raise _Doubt
    if port_guid is not None and (type(port_guid) is not str or not GUID_RE.fullmatch(port_guid)):
        raise _Doubt
    if capped is None:
        capped = []
    elif type(capped) is not list or capped:
        capped = _names(capped, _CAPPED_MAX)
        for name in capped:
            if name not in counters and name not in counters_ext:
                raise _Doubt
    # In portfields.PORT_FIELDS' order, by position: half the time of naming each field (0.35 against 0.7 µs).
    return PortIn(
        number,
        state_id,
        state_name,
        phys_id,
        phys_name,
        _optional_text(link_layer, _LINK_LAYER_MAX),
        gbps,
        lanes,
        speed,
        lid,
        sm_lid,
        lmc,
        cap_mask,
        port_guid,
        _names(netdevs, _NETDEVS_MAX),
        counters,
        counters_ext,
        capped,
        hw_counters,
        _verbs(verbs),
        _disagreements(agree),
    )
