"""A host's snapshot as the agent sends it: columnar (wire 3). Standard library only.

The snapshot DESIGN.md describes (schema 2, `snapshot --format json`) names every counter of every port:
a node of 8 one-port HCAs sends the same ~100 counter names eight times, each escaped twice more on its
way through the broker (the signed text inside the task's body inside kombu's envelope). On the wire
the names go once, in the order the snapshot states, and each port carries its values as arrays:

    {"wire": 3, "agent": "fabricweb 0.1.0", "schema": 2, "host", "collected_at", "source", "errors",
     "gpus" (when any),
     "names": {"counters": "name,name,...", "counters_ext": "...", "hw_counters": "..."},
     "devices": [{...the device's own fields as in schema 2...,
                  "ports": [{"port": 1, "link": [4, 5, "InfiniBand", ["HDR", 4], ..., disagreements],
                             "counters": [v, ...], "counters_ext": [...], "hw_counters": [...],
                             "absent": {"hw_counters": [i, ...]}  (only when a port lacks a name)}]}]}

A device's own fields (its attributes: GUIDs, firmware, model, PCIe link and path, verbs' view...) are
sent when they change, and otherwise at most every FULL_EVERY polls (`Encoder`, the agent's): in between
the device says `"same": true` and carries only its name, its hw_counters (counters, not attributes) and
its ports; so does the host's GPU list (`"gpus_same": true`). A port's hw_counters, which the agent reads
every Nth poll only (fabricweb/agent/poll.py), go the same way: a port whose hw_counters are as last sent
has no `hw_counters` key, and reads back as AS_LAST_SENT. Ingest keeps what it stored last for them
(telemetry/storage/apply.py), so a restarted agent (whose first poll is full) or a new consumer (which
reads the rows the last one stored) misses nothing but a device it never stored, until its next full poll.

`link` holds PORT_LINK_FIELDS in that order, valued as in schema 2, but shorter where schema 2's value can be told
from less (wire 3): a state or physical state whose name is the one facts.PORT_STATES / PHYS_STATES give its id is
its id alone (`4` for `{"id": 4, "name": "ACTIVE"}`), and a rate that is what the kernel prints for its speed and
width is `[speed, lanes]` (`["HDR", 4]` for `{"gbps": 200.0, "lanes": 4, "speed": "HDR", "bytes_per_second":
25000000000.0}`); anything else goes as in schema 2. A set's names go as one string, joined by commas, unless a
name holds one (then as a list); a set no port has a file of (counters_ext/ since Linux 4.5), and a device's own
hw_counters when it has none, go as nothing and read back as none. Each quote in the snapshot's text costs four
bytes in the broker (the text is escaped in the task's body, escaped again in kombu's envelope): an 8-HCA host's
message takes 5,277 bytes of Redis where wire 2's took 7,421. Ingest reads wire 2 as well (names as lists, links as
schema 2), what agents before wire 3 send. A counter's value is an integer or null (a file that could not be
read), as in schema 2; a name a port has no file for is listed by index in `absent`, so `decode(encode(s)) == s`
for every snapshot (tests/collectors/test_collectors_wire.py); what an Encoder leaves out reads back as it says
(`same`, `gpus_same`, AS_LAST_SENT).

`encode` is the agent's; `decode` is ingest's, which reads only wire 3 and 2 (an agent of another version is
refused with its version named: telemetry/intake/messages.py) and turns it back into schema 2 for the
same checks every snapshot gets. It refuses what it cannot read, with the reason (WireError), and never
builds more than the caps allow: names, devices and ports are counted before anything is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from importlib import metadata

from .facts import PHYS_STATES, PORT_STATES
from .link import SPEED_BY_NAME, WIDTHS, make_rate

WIRE_VERSION = 3
READABLE = (2, 3)  # what decode reads: wire 2 is an agent's from before wire 3 shortened the links and names
COUNTER_SETS = ("counters", "counters_ext", "hw_counters")  # per-port name -> value maps, sent as arrays
PORT_LINK_FIELDS = (
    "state", "phys_state", "link_layer", "rate", "lid", "sm_lid", "lmc", "cap_mask", "port_guid",
    "netdevs", "capped", "verbs", "disagreements",
)  # fmt: skip
# A device's fields that are not its attributes: sent at every poll.
PER_POLL_FIELDS = ("name", "hw_counters", "ports")
# Polls between two full snapshots: a device stored nowhere yet (a new consumer's) waits at most this long.
FULL_EVERY = 30
# Far past real hosts (typed.py's caps are checked again on the decoded snapshot): what decode builds at most.
MAX_NAMES = 512
MAX_NAME_CHARS = 256  # a name's longest, with its comma: what bounds a joined string of MAX_NAMES names
MAX_DEVICES = 64
MAX_PORTS = 128


def agent_name() -> str:
    """Who sends (the `agent` of a wire snapshot): fabricweb and its version, as installed."""
    try:
        return f"fabricweb {metadata.version('fabricweb')}"
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "fabricweb (not installed)"


class WireError(ValueError):
    """A wire snapshot that cannot be read back, with the reason."""


class _LastSent(Mapping):
    """The hw_counters of a port its agent left out, being as it last sent them: empty to whoever reads them,
    and told by identity (`is AS_LAST_SENT`) where the last ones are kept (ingest's rows)."""

    __slots__ = ()

    def __getitem__(self, name: str) -> int | None:
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "AS_LAST_SENT"


AS_LAST_SENT = _LastSent()
# (device name, port number, its hw_counters) -> whether to leave them out: the Encoder's, as last sent.
LeaveOut = Callable[[str, object, Mapping], bool]


def encode(snapshot: Mapping, agent: str | None = None, leave_out: LeaveOut | None = None) -> dict:
    """The wire form of a schema 2 snapshot (to_dict's), sent by `agent` (its name and version: agent_name());
    a port's hw_counters left out where `leave_out` says so."""
    names: dict[str, dict[str, int]] = {kind: {} for kind in COUNTER_SETS}
    for device in snapshot["devices"]:
        for port in device["ports"]:
            for kind in COUNTER_SETS:
                index = names[kind]
                for name in port[kind]:
                    if name not in index:
                        index[name] = len(index)
    out = {"wire": WIRE_VERSION, "agent": agent or agent_name()}
    out.update((key, value) for key, value in snapshot.items() if key != "devices")
    out["names"] = {kind: _joined(list(index)) for kind, index in names.items()}
    out["devices"] = [_device(device, names, leave_out) for device in snapshot["devices"]]
    return out


class Encoder:
    """The agent's: encodes each host's snapshots, leaving out what it sent already (the attributes of a
    device, the GPU list, a port's hw_counters) unless they changed or FULL_EVERY polls passed since the
    last full snapshot."""

    def __init__(self, agent: str | None = None, full_every: int = FULL_EVERY) -> None:
        self.agent, self.full_every = agent or agent_name(), full_every
        self._polls: dict[str, int] = {}  # host -> snapshots encoded since its last full one
        self._sent: dict[tuple[str, str], dict] = {}  # (host, device) -> its attributes as last sent
        self._gpus: dict[str, object] = {}  # host -> its GPU list as last sent
        self._hw: dict[tuple[str, str, object], Mapping] = {}  # (host, device, port) -> its hw_counters as last sent

    def encode(self, snapshot: Mapping) -> dict:
        host = snapshot["host"]
        full = self._polls.get(host, 0) % self.full_every == 0
        self._polls[host] = self._polls.get(host, 0) + 1

        def leave_out(device: str, port: object, hw: Mapping) -> bool:
            key = (host, device, port)
            if not full and self._hw.get(key) == hw:
                return True
            self._hw[key] = hw
            return False

        out = encode(snapshot, self.agent, leave_out)
        for device in out["devices"]:
            attributes = {k: v for k, v in device.items() if k not in PER_POLL_FIELDS}
            key = (host, device["name"])
            if not full and self._sent.get(key) == attributes:
                for field in attributes:
                    del device[field]
                device["same"] = True
            else:
                self._sent[key] = attributes
        gpus = snapshot.get("gpus")
        if not full and host in self._gpus and self._gpus[host] == gpus:
            out.pop("gpus", None)
            out["gpus_same"] = True
        else:
            self._gpus[host] = gpus
        return out


def _device(device: Mapping, names: dict[str, dict[str, int]], leave_out: LeaveOut | None) -> dict:
    # (a device's own hw_counters, when it has none, go as nothing: read back as none)
    out = {key: value for key, value in device.items() if key != "ports" and (key != "hw_counters" or value)}
    name = device["name"]
    out["ports"] = [
        _port(port, names, leave_out is not None and leave_out(name, port["port"], port["hw_counters"]))
        for port in device["ports"]
    ]
    return out


def _joined(names: list[str]) -> str | list[str]:
    """A set's names as sent: one string, joined by commas, unless a name holds one (or is empty: `""` is no name)."""
    return names if any("," in name or not name for name in names) else ",".join(names)


@cache
def rate_of(speed: str, lanes: int) -> dict:
    """A rate in schema 2's form, as the kernel prints it for `lanes`X `speed` (`make_rate`): what `[speed, lanes]`
    in a wire 3 link stands for. Shared: copy it before handing it on."""
    rate = make_rate(speed, lanes)
    return {"gbps": rate.gbps, "lanes": lanes, "speed": speed, "bytes_per_second": rate.bytes_per_second}


def _short_state(value, names: dict[int, str]):
    ident = value.get("id") if type(value) is dict and len(value) == 2 else None
    if type(ident) is int and ident in names and names[ident] == value.get("name"):
        return ident
    return value


def _short_rate(value):
    if type(value) is not dict:
        return value
    speed, lanes = value.get("speed"), value.get("lanes")
    # (by type first: True == 1, and rate_of's cache would hand a bool's entry to the int)
    if type(speed) is str and speed in SPEED_BY_NAME and type(lanes) is int and lanes in WIDTHS:
        full = rate_of(speed, lanes)
        if value == full and all(type(value[key]) is type(held) for key, held in full.items()):
            return [speed, lanes]
    return value


def _port(port: Mapping, names: dict[str, dict[str, int]], hw_as_last_sent: bool) -> dict:
    link = [port[field] for field in PORT_LINK_FIELDS]
    link[0], link[1], link[3] = (
        _short_state(link[0], PORT_STATES),
        _short_state(link[1], PHYS_STATES),
        _short_rate(link[3]),
    )
    out = {"port": port["port"], "link": link}
    absent = {}
    for kind in COUNTER_SETS:
        if hw_as_last_sent and kind == "hw_counters":
            continue
        if not names[kind] and kind in _NONE_IF_UNSENT:
            continue  # no port of the host has such a file: read back as none
        values = port[kind]
        out[kind] = [values.get(name) for name in names[kind]]
        if len(values) != len(names[kind]):
            absent[kind] = [i for i, name in enumerate(names[kind]) if name not in values]
    if absent:
        out["absent"] = absent
    return out


def decode(wire: object) -> dict:
    """The schema 2 snapshot of a wire snapshot; WireError saying why it cannot be read."""
    if not isinstance(wire, dict):
        raise WireError("a snapshot is a JSON object")
    if wire.get("wire") not in READABLE:
        raise WireError(f"wire {wire.get('wire')!r}, not {' or '.join(map(str, READABLE))}")
    names = wire.get("names")
    if not isinstance(names, dict):
        raise WireError("names: expected an object of counter names")
    columns = {kind: _names(names.get(kind), kind) for kind in COUNTER_SETS}
    devices = wire.get("devices")
    if not isinstance(devices, list) or len(devices) > MAX_DEVICES:
        raise WireError(f"devices: expected a list of at most {MAX_DEVICES}")
    gpus_same = wire.get("gpus_same")
    if (gpus_same is not None and gpus_same is not True) or (gpus_same and "gpus" in wire):
        raise WireError("gpus_same: expected true, and no gpus beside it, or nothing")
    out = {key: value for key, value in wire.items() if key not in ("wire", "agent", "names", "devices")}
    out["devices"] = [_read_device(device, i, columns) for i, device in enumerate(devices)]
    return out


def _names(value: object, kind: str) -> list[str]:
    if isinstance(value, str):  # wire 3's, joined; its length bounds the names it makes (each at least a comma)
        if len(value) > MAX_NAMES * MAX_NAME_CHARS:
            raise WireError(f"names.{kind}: more than {MAX_NAMES * MAX_NAME_CHARS} characters")
        value = value.split(",") if value else []
    if not isinstance(value, list) or len(value) > MAX_NAMES or not all(isinstance(n, str) for n in value):
        raise WireError(f"names.{kind}: expected a list of at most {MAX_NAMES} names")
    if len(set(value)) != len(value):
        raise WireError(f"names.{kind}: a name given twice")
    return value


def _read_device(device: object, index: int, columns: dict[str, list[str]]) -> dict:
    if not isinstance(device, dict):
        raise WireError(f"devices[{index}]: expected an object")
    ports = device.get("ports")
    if not isinstance(ports, list) or len(ports) > MAX_PORTS:
        raise WireError(f"devices[{index}].ports: expected a list of at most {MAX_PORTS}")
    same = device.get("same")
    if same is not None and same is not True:  # (1 == True: compared by identity)
        raise WireError(f"devices[{index}].same: expected true or nothing")
    if same and set(device) - {*PER_POLL_FIELDS, "same"}:
        raise WireError(f"devices[{index}]: its attributes as last sent (same) and attributes both")
    out = {key: value for key, value in device.items() if key != "ports"}
    out.setdefault("hw_counters", {})  # (none: not sent)
    out["ports"] = [_read_port(port, f"devices[{index}].ports[{i}]", columns) for i, port in enumerate(ports)]
    return out


def _read_port(port: object, where: str, columns: dict[str, list[str]]) -> dict:
    if not isinstance(port, dict):
        raise WireError(f"{where}: expected an object")
    link = port.get("link")
    if not isinstance(link, list) or len(link) != len(PORT_LINK_FIELDS):
        raise WireError(f"{where}.link: expected {len(PORT_LINK_FIELDS)} values ({', '.join(PORT_LINK_FIELDS)})")
    out = {"port": port.get("port"), **dict(zip(PORT_LINK_FIELDS, link, strict=True))}
    out["state"] = _long_state(out["state"], PORT_STATES, f"{where}.link[0]")
    out["phys_state"] = _long_state(out["phys_state"], PHYS_STATES, f"{where}.link[1]")
    rate = out["rate"]
    if isinstance(rate, list):
        if (
            len(rate) != 2
            or type(rate[0]) is not str
            or rate[0] not in SPEED_BY_NAME
            or type(rate[1]) is not int
            or rate[1] not in WIDTHS
        ):
            raise WireError(f"{where}.link[3]: a rate as [speed, lanes], of {', '.join(SPEED_BY_NAME)} and {WIDTHS}")
        out["rate"] = dict(rate_of(*rate))
    absent = port.get("absent") or {}
    if not isinstance(absent, dict):
        raise WireError(f"{where}.absent: expected an object")
    for kind, names in columns.items():
        values = port.get(kind)
        if kind in _NONE_IF_UNSENT and not names and kind not in port:
            if kind in absent:
                raise WireError(f"{where}: no {kind} sent (none named), and absent ones")
            out[kind] = {}
            continue
        if kind == "hw_counters" and "hw_counters" not in port:
            if "hw_counters" in absent:
                raise WireError(f"{where}: its hw_counters as last sent (none given) and absent ones both")
            out[kind] = AS_LAST_SENT
            continue
        if not isinstance(values, list) or len(values) != len(names):
            raise WireError(f"{where}.{kind}: expected {len(names)} values, one per name in names.{kind}")
        counters = dict(zip(names, values, strict=True))
        missing = absent.get(kind, [])
        if not isinstance(missing, list) or not all(type(i) is int and 0 <= i < len(names) for i in missing):
            raise WireError(f"{where}.absent.{kind}: expected indexes into names.{kind}")
        for i in missing:
            counters.pop(names[i], None)
        out[kind] = counters
    # Schema 2's key order: port, state ... hw_counters, verbs, disagreements (as to_dict writes it).
    return {key: out[key] for key in _PORT_ORDER}


def _long_state(value, names: dict[int, str], where: str):
    """A state as schema 2 has it: wire 3's id alone is its id and the name the tables give it."""
    if type(value) is not int:
        return value
    if value not in names:
        raise WireError(f"{where}: a state given by its id alone ({value}) must be one of {sorted(names)}")
    return {"id": value, "name": names[value]}


# A port's sets sent as nothing when the snapshot names none of their files (counters_ext/ is gone since Linux 4.5);
# not hw_counters, whose absence says "as last sent".
_NONE_IF_UNSENT = ("counters", "counters_ext")

_PORT_ORDER = (
    "port", "state", "phys_state", "link_layer", "rate", "lid", "sm_lid", "lmc", "cap_mask", "port_guid",
    "netdevs", "counters", "counters_ext", "capped", "hw_counters", "verbs", "disagreements",
)  # fmt: skip
