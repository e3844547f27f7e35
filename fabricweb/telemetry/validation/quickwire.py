"""The wire form's quick path: a node's snapshot as collectors/wire.py sends it, checked and typed in one pass.

messages.from_wire reads a wire snapshot back into schema 2 (a dict per port, three dicts of named counters
each) for parse_snapshot to check and type once more: about half of what reading a host's message costs ingest.
Here the wire form goes straight to the typed snapshot: the counter names are checked once a message (by
quickparse's rule, names the worded checks have passed), each port's values as the lists they are, its link by
position, with quickparse's own checks (port_in and the rest). As quickparse, it accepts only what from_wire
and parse_snapshot accept, with the same values and types, and returns None at any doubt: the caller then
goes the long way, which finds the problem and words it (tests/telemetry/test_telemetry_quickwire.py compares
the two on random wire snapshots).
"""

from __future__ import annotations

from datetime import datetime

from collectors import wire

from . import quickparse
from .checks import GOOD_NAMES, MAX_COUNTERS, all_counters
from .typed import DeviceIn, PortIn, SnapshotIn

_PER_POLL = frozenset(wire.PER_POLL_FIELDS) | {"same"}  # a device "as last sent" carries these alone


class _Doubt(Exception):
    """Not certainly what the long way accepts: it decides."""


def parse_wire(data, now: datetime) -> SnapshotIn | None:
    """parse_snapshot(from_wire(data), now), where the quick path can tell; None where the long way must look."""
    try:
        return _snapshot(data, now)
    except Exception:  # _Doubt, a check's own exception, anything odd: the long way decides and words it
        return None


def _snapshot(data, now: datetime) -> SnapshotIn:
    if type(data) is not dict or data.get("wire") not in wire.READABLE:
        raise _Doubt
    names = data.get("names")
    if type(names) is not dict:
        raise _Doubt
    columns = tuple(_names(names.get(kind)) for kind in wire.COUNTER_SETS)
    devices = data.get("devices")
    if type(devices) is not list or len(devices) > wire.MAX_DEVICES or (data.get("gpus_same") and "gpus" in data):
        raise _Doubt

    def port(p) -> PortIn:
        return _port(p, columns)

    def ports(d: dict) -> list[PortIn]:
        listed = d.get("ports")
        if type(listed) is not list or len(listed) > wire.MAX_PORTS:
            raise _Doubt
        return quickparse.ports_in(d, port)

    def device(d, tree: bool) -> DeviceIn:
        if type(d) is not dict or (d.get("same") and not _PER_POLL.issuperset(d)):
            raise _Doubt
        return quickparse.device_in(d, tree, ports)

    # The snapshot's own fields are schema 2's (from_wire keeps them as they are): quickparse's checks.
    return quickparse.snapshot(data, now, device)


def _names(value) -> list[str]:
    """A list of counter names (wire 3: joined by commas), each one the worded checks have passed, none twice."""
    if type(value) is str and len(value) <= wire.MAX_NAMES * wire.MAX_NAME_CHARS:
        value = value.split(",") if value else []
    if type(value) is not list or len(value) > MAX_COUNTERS or not GOOD_NAMES.issuperset(value):
        raise _Doubt
    if len(set(value)) != len(value):
        raise _Doubt
    return value


def _port(p, columns: tuple[list[str], ...]) -> PortIn:
    if type(p) is not dict:
        raise _Doubt
    link = p.get("link")
    if type(link) is not list or len(link) != len(wire.PORT_LINK_FIELDS):
        raise _Doubt
    absent = p.get("absent") or {}  # (what the long way reads as none)
    if type(absent) is not dict:
        raise _Doubt
    counters, counters_ext, hw_counters = columns  # (names, in wire.COUNTER_SETS' order)
    if "hw_counters" in p:
        hw = _values(p["hw_counters"], hw_counters, absent.get("hw_counters", ()))
    elif "hw_counters" in absent:
        raise _Doubt
    else:
        hw = wire.AS_LAST_SENT
    return quickparse.port_in(
        p.get("port"),
        link,
        _sent_set(p, "counters", counters, absent),
        _sent_set(p, "counters_ext", counters_ext, absent),
        hw,
        short=True,
    )


def _sent_set(p: dict, kind: str, names: list[str], absent: dict) -> dict[str, int | None]:
    """A port's counters or counters_ext: none where the snapshot names none of the set's files and sends nothing
    (collectors/wire.py), else its values."""
    if not names and kind not in p and kind not in absent:
        return {}
    return _values(p.get(kind), names, absent.get(kind, ()))


def _values(values, names: list[str], absent) -> dict[str, int | None]:
    """A port's values of one counter set, less the names it has no file for (`absent`: their indexes), as the
    named counters schema 2 gives (quickparse._counters' checks)."""
    if type(values) is not list or len(values) != len(names):
        raise _Doubt
    if not all_counters(values):
        raise _Doubt
    counters = dict(zip(names, values, strict=False))  # (as long as each other: checked above)
    if absent:
        if type(absent) is not list:
            raise _Doubt
        for i in absent:
            if type(i) is not int or not 0 <= i < len(names):
                raise _Doubt
        for i in absent:
            counters.pop(names[i], None)
    elif absent != () and type(absent) is not list:  # present and not a list (an empty one is none absent)
        raise _Doubt
    return counters
