"""Fault specs (`NODE[/DEVICE[/PORT]]:KIND[=VALUE]`) and the faults.json control file.

The control file is the only channel between `python -m collectors fault ...` and a
running simulator: the simulator re-reads it every step, editors replace it
atomically under a lock, so neither ever sees half a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..link import SPEED_BY_NAME, WIDTHS
from ..pcie import describe
from .hardware import PCIE_GTS, PCIE_WIDTHS
from .layout import Layout, LayoutError, SimNode
from .pcitree import SHAPES
from .roce import ROCE_FAULTS, check_roce

if TYPE_CHECKING:
    from .cabling import Cabling

FAULTS_FILE = "faults.json"
_LOCK_FILE = ".faults.lock"
TMP_DIR = ".simtmp"

# Layout faults: a node's PCIe tree (and a dgx node's 8 HCAs) is built with the fabric, never changed later.
LAYOUT_KINDS = frozenset(SHAPES)
_NO_VALUE = frozenset({"down", "disabled", "flap", "reset", "saturate", "vanish", "mute", "miscable", *LAYOUT_KINDS})
_NO_VALUE |= ROCE_FAULTS  # a RoCE port's lossless Ethernet broken (sim/roce.py)
# Error faults: the counter each one raises at a rate, while the link is up.
ERROR_RATE_COUNTERS = {
    "symbol-errors": "symbol_error",
    "rcv-errors": "port_rcv_errors",
    "remote-errors": "port_rcv_remote_physical_errors",
    "discards": "port_xmit_discards",
}
_WITH_VALUE = frozenset({"speed", "width", "pcie", "uplink", "vfs", *ERROR_RATE_COUNTERS})
# Kinds of the HCA's PCI function or the switch uplink above it: a node or device takes them, a port does not.
_PCI_KINDS = frozenset({"pcie", "uplink", "vfs"})
MAX_VFS = 16  # SR-IOV virtual functions per physical function (the simulated cards' sriov_totalvfs)
KINDS = tuple(sorted(_NO_VALUE | _WITH_VALUE))
_PER_UNIT = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}
# What a fault on a switch (leaf03) or a switch port (leaf03/12) can be.
SWITCH_KINDS = frozenset({"down", "flap", "symbol-errors", "mute", "speed", "width"})
# In fabric mode these are built into fabric.net: ibsim cannot retrain or recable a running link.
START_ONLY = frozenset({"speed", "width", "miscable"})
IBSIM_SPEEDS = ("SDR", "DDR", "QDR")  # what ibsim's ports can train at
IBSIM_WIDTHS = (1, 4, 8, 12)
_SPEC_RE = re.compile(
    r"^(?P<node>[^/:\s]+)(?:/(?P<dev>[^/:\s]+)(?:/(?P<port>\d+))?)?:(?P<kind>[a-z-]+)(?:=(?P<val>\S+))?$"
)
_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(?:/([a-z]+))?$")
_PCIE_RE = re.compile(r"^(?:GEN(\d))?(?:X(\d+))?$")


class FaultError(ValueError):
    """A fault spec that does not parse, names nothing in the fabric, or a bad faults.json."""


@dataclass(frozen=True, slots=True)
class Fault:
    node: str
    device: str | None
    port: int | None
    kind: str
    value: object = None  # parsed: speed name, lanes, errors/s, (gts|None, width|None), VFs
    text: str | None = None  # the value as written, normalised

    @property
    def target(self) -> str:
        return "/".join(str(x) for x in (self.node, self.device, self.port) if x is not None)

    @property
    def spec(self) -> str:
        return f"{self.target}:{self.kind}" + (f"={self.text}" if self.text is not None else "")

    @property
    def depth(self) -> int:
        return 1 + (self.device is not None) + (self.port is not None)

    def covers(self, key: str) -> bool:
        """True when this fault's target is `key` (node/device/port) or contains it."""
        target = self.target
        return key == target or key.startswith(target + "/")


def _value(kind: str, text: str) -> tuple[object, str]:
    if kind == "speed":
        name = text.upper()
        if name not in SPEED_BY_NAME:
            raise FaultError(f"speed={text}: not an InfiniBand speed (one of {', '.join(SPEED_BY_NAME)})")
        return name, name
    if kind == "width":
        digits = text.upper().removesuffix("X")
        if not digits.isdigit() or int(digits) not in WIDTHS:
            raise FaultError(f"width={text}: not an InfiniBand width (1X, 2X, 4X, 8X or 12X)")
        return int(digits), f"{int(digits)}X"
    if kind == "vfs":
        if not (text.isascii() and text.isdigit()) or int(text) > MAX_VFS:
            raise FaultError(f"vfs={text}: expected a number of virtual functions per HCA, 0 to {MAX_VFS}")
        return int(text), str(int(text))
    if kind in ERROR_RATE_COUNTERS:
        m = _RATE_RE.match(text.lower())
        if m is None or (m.group(2) or "") not in _PER_UNIT:
            raise FaultError(f"{kind}={text}: expected a number of errors per second, or N/s, N/min, N/h")
        return float(m.group(1)) / _PER_UNIT[m.group(2) or ""], text.lower()
    m = _PCIE_RE.match(text.upper())  # pcie, uplink
    if m is None or not (m.group(1) or m.group(2)):
        raise FaultError(f"{kind}={text}: expected GEN<g>x<lanes> (e.g. GEN3x8), GEN<g> or x<lanes>")
    gen, lanes = m.group(1), m.group(2)
    if gen is not None and int(gen) not in PCIE_GTS:
        raise FaultError(f"{kind}={text}: PCIe generation must be 1 to 6")
    if lanes is not None and int(lanes) not in PCIE_WIDTHS:
        raise FaultError(f"{kind}={text}: PCIe width must be one of {', '.join(map(str, PCIE_WIDTHS))}")
    norm = (f"GEN{gen}" if gen else "") + (f"x{int(lanes)}" if lanes else "")
    return (PCIE_GTS[int(gen)] if gen else None, int(lanes) if lanes else None), norm


def parse(spec: str) -> Fault:
    """Parse a spec; syntax and values only (check() tests it against a fabric)."""
    m = _SPEC_RE.match(spec.strip())
    if m is None:
        raise FaultError(f"{spec!r}: expected NODE[/DEVICE[/PORT]]:KIND[=VALUE], e.g. cn003/mlx5_0/1:speed=QDR")
    kind, text = m.group("kind"), m.group("val")
    if kind not in KINDS:
        raise FaultError(f"{spec!r}: unknown fault kind {kind!r} (one of {', '.join(KINDS)})")
    node, device, port = _target(m)
    if kind in _PCI_KINDS and port is not None:
        raise FaultError(f"{spec!r}: {kind} is a fault of the HCA's PCI function: name NODE or NODE/DEVICE")
    if kind in LAYOUT_KINDS and (device is not None or port is not None):
        raise FaultError(f"{spec!r}: {kind} reshapes a whole node: name the node alone, e.g. {node}:{kind}")
    if kind in _NO_VALUE:
        if text is not None:
            raise FaultError(f"{spec!r}: {kind} takes no value")
        return Fault(node, device, port, kind)
    if text is None:
        raise FaultError(f"{spec!r}: {kind} needs a value, e.g. {kind}={_EXAMPLES[kind]}")
    value, norm = _value(kind, text)
    return Fault(node, device, port, kind, value, norm)


def _target(m: re.Match) -> tuple[str, str | None, int | None]:
    """(node, device, port); a switch port is written SWITCH/NUMBER, so a number there is a port."""
    node, dev, port = m.group("node"), m.group("dev"), m.group("port")
    if dev is not None and dev.isdigit() and port is None:
        return node, None, int(dev)
    return node, dev, int(port) if port else None


_EXAMPLES = {"speed": "QDR", "width": "1X", "pcie": "GEN3x8", "uplink": "x8", "vfs": "4"}
_EXAMPLES.update(dict.fromkeys(ERROR_RATE_COUNTERS, "50/h"))


def check(fault: Fault, layout: Layout, cabling: Cabling | None = None, *, at_start: bool = False) -> Fault:
    """The fault, if what it names exists and can have it; FaultError otherwise.

    `cabling` is the switch fabric of a simulator in fabric mode (None without one);
    `at_start` says the fabric is being created, the only time START_ONLY kinds are taken there.
    """
    if cabling is not None and fault.node in cabling.switches:
        _check_switch(fault, cabling)
    else:
        _check_host(fault, layout, cabling)
    if cabling is not None:
        _check_ibsim(fault, at_start)
    return fault


def _check_host(fault: Fault, layout: Layout, cabling: Cabling | None) -> None:
    try:
        layout.resolve(fault.node, None, None)
        if fault.device is None and fault.port is not None:
            raise FaultError(f"{fault.spec}: name a host port as NODE/DEVICE/PORT (NODE/NUMBER is a switch port)")
        layout.resolve(fault.node, fault.device, fault.port)
    except LayoutError as e:
        more = f"; switches: {cabling.names()}" if cabling else ""
        raise FaultError(f"{fault.spec}: {e}{more}") from None
    if fault.kind == "mute":
        raise FaultError(f"{fault.spec}: mute is a switch fault (SWITCH:mute, in a simulator started with --fabric)")
    if fault.kind in LAYOUT_KINDS:
        raise FaultError(
            f"{fault.spec}: {fault.kind} changes the node's PCIe tree (and a dgx node's HCAs), which is built with "
            f"the fabric: give it when the fabric is created (simulate --fresh --fault {fault.spec})"
        )
    if fault.kind == "uplink":
        _check_uplink(fault, layout)
    if fault.kind in ROCE_FAULTS and (why := check_roce(fault.spec, fault.target, layout)) is not None:
        raise FaultError(why)
    if fault.kind == "miscable":
        if cabling is None:
            raise FaultError(
                f"{fault.spec}: miscable moves a cable between switches: start the simulator with --fabric"
            )
        if fault.port is None or layout.by_key[f"{fault.node}/{fault.device}"].model.link_layer != "InfiniBand":
            raise FaultError(f"{fault.spec}: miscable names one InfiniBand host port, NODE/DEVICE/PORT")


def _check_uplink(fault: Fault, layout: Layout) -> None:
    """An uplink trains at most at what it supports: a faster value would be no fault at all."""
    thing = layout.resolve(fault.node, fault.device, None)
    for dev in thing.devices if isinstance(thing, SimNode) else (thing,):
        top = dev.slot.uplink
        if (fault.value[0] or 0) > top[0] or (fault.value[1] or 0) > top[1]:
            raise FaultError(f"{fault.spec}: the PCIe switch uplink above {dev.key} supports {describe(*top)} at most")


def _check_switch(fault: Fault, cabling: Cabling) -> None:
    switch = cabling.switches[fault.node]
    if fault.device is not None:
        raise FaultError(f"{fault.spec}: a switch port is SWITCH/NUMBER, e.g. {switch.name}/12")
    if fault.port is not None and not 1 <= fault.port <= switch.ports:
        raise FaultError(f"{fault.spec}: {switch.name} has ports 1 to {switch.ports}")
    if fault.kind not in SWITCH_KINDS:
        raise FaultError(f"{fault.spec}: not a switch fault (switches take {', '.join(sorted(SWITCH_KINDS))})")
    if fault.kind == "mute" and fault.port is not None:
        raise FaultError(f"{fault.spec}: mute silences a whole switch: {switch.name}:mute")


def _check_ibsim(fault: Fault, at_start: bool) -> None:
    """What ibsim can simulate: SDR to QDR, 1X/4X/8X/12X, and no link change while it runs."""
    if fault.kind not in START_ONLY:
        return
    if not at_start:
        what = "its cabling" if fault.kind == "miscable" else "a link's width or speed"
        raise FaultError(
            f"{fault.spec}: ibsim cannot change {what} while it runs, so in a --fabric simulator "
            f"{fault.kind} is built into fabric.net when the fabric is created "
            f"(simulate --fresh --fabric --fault {fault.spec})"
        )
    if fault.kind == "speed" and fault.value not in IBSIM_SPEEDS:
        raise FaultError(f"{fault.spec}: ibsim simulates {', '.join(IBSIM_SPEEDS)} links only")
    if fault.kind == "width" and fault.value not in IBSIM_WIDTHS:
        raise FaultError(f"{fault.spec}: ibsim simulates 1X, 4X, 8X and 12X links only")


@dataclass(slots=True)
class PortEffects:
    """What the faults covering one port do to it (the most specific fault of a kind wins)."""

    down: bool = False
    disabled: bool = False
    flap: bool = False
    saturate: bool = False
    speed: str | None = None
    lanes: int | None = None
    symbol_rate: float = 0.0
    # Other error counters raised per second (rcv-errors, remote-errors, discards): counter -> rate.
    error_rates: dict[str, float] = field(default_factory=dict)
    reset_ids: tuple[int, ...] = ()
    pcie: tuple[float | None, int | None] = (None, None)
    uplink: tuple[float | None, int | None] = (None, None)  # the PCIe switch uplink above the port's HCA
    vfs: int = 0  # SR-IOV virtual functions of the port's HCA
    roce: frozenset[str] = frozenset()  # ROCE_FAULTS on the port: pause-storm, cnp-storm


def effects(active: list[tuple[int, Fault]], port_key: str) -> PortEffects:
    eff = PortEffects()
    resets = []
    for fid, f in sorted(active, key=lambda item: item[1].depth):
        if not f.covers(port_key):
            continue
        if f.kind in ("down", "disabled", "flap", "saturate"):
            setattr(eff, f.kind, True)
        elif f.kind == "speed":
            eff.speed = f.value
        elif f.kind == "width":
            eff.lanes = f.value
        elif f.kind == "symbol-errors":
            eff.symbol_rate = f.value
        elif f.kind in ERROR_RATE_COUNTERS:
            eff.error_rates[ERROR_RATE_COUNTERS[f.kind]] = f.value
        elif f.kind == "reset":
            resets.append(fid)
        elif f.kind in ("pcie", "uplink"):
            gts, width = f.value
            was = getattr(eff, f.kind)
            setattr(eff, f.kind, (gts or was[0], width or was[1]))
        elif f.kind == "vfs":
            eff.vfs = f.value
        elif f.kind in ROCE_FAULTS:
            eff.roce |= {f.kind}
    eff.reset_ids = tuple(resets)
    return eff


def vanished(active: list[tuple[int, Fault]]) -> set[str]:
    return {f.target for _, f in active if f.kind == "vanish"}


def port_link(eff: PortEffects, step: int) -> tuple[bool, int]:
    """(link up, phys_state id). Flapping ports are down on odd steps."""
    if eff.disabled:
        return False, 3
    if eff.down or (eff.flap and step % 2 == 1):
        return False, 2
    return True, 5


# -- faults.json ----------------------------------------------------------------------


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data`; the temp file lives in DIR/.simtmp so no listing ever shows it."""
    tmp_dir = os.path.join(os.path.dirname(path), TMP_DIR)
    os.makedirs(tmp_dir, exist_ok=True)
    tmp = os.path.join(tmp_dir, f"{os.path.basename(path)}.{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def read_file(out: str) -> dict:
    """The control file's content; an empty one when it does not exist yet."""
    path = os.path.join(out, FAULTS_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return {"version": 1, "next_id": 1, "faults": []}
    except (OSError, ValueError) as e:
        raise FaultError(f"{path}: unreadable ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("faults"), list):
        raise FaultError(f"{path}: expected an object with a 'faults' list")
    return doc


def load(out: str, layout: Layout, cabling: Cabling | None = None) -> list[tuple[int, Fault]]:
    """Active faults as (id, Fault), each checked against the fabric."""
    doc = read_file(out)
    try:
        return [(int(e["id"]), check(parse(e["spec"]), layout, cabling)) for e in doc["faults"]]
    except (KeyError, TypeError) as e:
        raise FaultError(f"{os.path.join(out, FAULTS_FILE)}: malformed entry ({e})") from None


class _Locked:
    """Serialises read-modify-write of faults.json between concurrent `fault` commands."""

    def __init__(self, out: str) -> None:
        self.path = os.path.join(out, _LOCK_FILE)

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        os.close(self.fd)  # closing drops the lock


def _save(out: str, doc: dict) -> None:
    write_atomic(os.path.join(out, FAULTS_FILE), (json.dumps(doc, indent=1) + "\n").encode())


def edit(
    out: str,
    layout: Layout,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    clear: bool = False,
    cabling: Cabling | None = None,
) -> list:
    """Add, remove or clear faults; returns the active specs. All specs are checked before anything changes."""
    to_add = [check(parse(s), layout, cabling) for s in add]
    to_remove = [parse_loose(s) for s in remove]
    with _Locked(out):
        doc = read_file(out)
        entries = [] if clear else list(doc["faults"])
        for f in to_remove:
            kept = [e for e in entries if not matches(f, parse(e["spec"]))]
            if len(kept) == len(entries):
                raise FaultError(f"{f.spec}: no active fault matches")
            entries = kept
        next_id = int(doc.get("next_id", 1))
        for f in to_add:
            # One fault per target and kind: adding again replaces the value (and re-arms a reset).
            entries = [e for e in entries if not matches(Fault(f.node, f.device, f.port, f.kind), parse(e["spec"]))]
            entries.append({"id": next_id, "spec": f.spec})
            next_id += 1
        _save(out, {"version": 1, "next_id": next_id, "faults": entries})
    return [e["spec"] for e in entries]


def parse_loose(spec: str) -> Fault:
    """A spec for `remove` may leave out the value: `cn003/mlx5_0/1:speed` removes any speed fault there."""
    m = _SPEC_RE.match(spec.strip())
    if m and m.group("kind") in _WITH_VALUE and m.group("val") is None:
        return Fault(*_target(m), m.group("kind"))
    return parse(spec)


def matches(pattern: Fault, f: Fault) -> bool:
    same = (pattern.node, pattern.device, pattern.port, pattern.kind) == (f.node, f.device, f.port, f.kind)
    return same and (pattern.text is None or pattern.text == f.text)
