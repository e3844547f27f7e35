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

from ..link import SPEED_BY_NAME, WIDTHS
from .hardware import PCIE_GTS, PCIE_WIDTHS
from .layout import Layout, LayoutError

FAULTS_FILE = "faults.json"
_LOCK_FILE = ".faults.lock"
TMP_DIR = ".simtmp"

_NO_VALUE = frozenset({"down", "disabled", "flap", "reset", "saturate", "vanish"})
# Error faults: the counter each one raises at a rate, while the link is up.
ERROR_RATE_COUNTERS = {
    "symbol-errors": "symbol_error",
    "rcv-errors": "port_rcv_errors",
    "remote-errors": "port_rcv_remote_physical_errors",
    "discards": "port_xmit_discards",
}
_WITH_VALUE = frozenset({"speed", "width", "pcie", *ERROR_RATE_COUNTERS})
KINDS = tuple(sorted(_NO_VALUE | _WITH_VALUE))
_PER_UNIT = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}
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
    value: object = None  # parsed: speed name, lanes, errors/s, (gts|None, width|None)
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
    if kind in ERROR_RATE_COUNTERS:
        m = _RATE_RE.match(text.lower())
        if m is None or (m.group(2) or "") not in _PER_UNIT:
            raise FaultError(f"{kind}={text}: expected a number of errors per second, or N/s, N/min, N/h")
        return float(m.group(1)) / _PER_UNIT[m.group(2) or ""], text.lower()
    m = _PCIE_RE.match(text.upper())  # pcie
    if m is None or not (m.group(1) or m.group(2)):
        raise FaultError(f"pcie={text}: expected GEN<g>x<lanes> (e.g. GEN3x8), GEN<g> or x<lanes>")
    gen, lanes = m.group(1), m.group(2)
    if gen is not None and int(gen) not in PCIE_GTS:
        raise FaultError(f"pcie={text}: PCIe generation must be 1 to 6")
    if lanes is not None and int(lanes) not in PCIE_WIDTHS:
        raise FaultError(f"pcie={text}: PCIe width must be one of {', '.join(map(str, PCIE_WIDTHS))}")
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
    port = int(m.group("port")) if m.group("port") else None
    if kind == "pcie" and port is not None:
        raise FaultError(f"{spec!r}: pcie is a fault of the HCA's PCI function: name NODE or NODE/DEVICE")
    if kind in _NO_VALUE:
        if text is not None:
            raise FaultError(f"{spec!r}: {kind} takes no value")
        return Fault(m.group("node"), m.group("dev"), port, kind)
    if text is None:
        raise FaultError(f"{spec!r}: {kind} needs a value, e.g. {kind}={_EXAMPLES[kind]}")
    value, norm = _value(kind, text)
    return Fault(m.group("node"), m.group("dev"), port, kind, value, norm)


_EXAMPLES = {"speed": "QDR", "width": "1X", "pcie": "GEN3x8", **dict.fromkeys(ERROR_RATE_COUNTERS, "50/h")}


def check(fault: Fault, layout: Layout) -> Fault:
    """The fault, if the node/device/port it names exists; FaultError otherwise."""
    try:
        layout.resolve(fault.node, fault.device, fault.port)
    except LayoutError as e:
        raise FaultError(f"{fault.spec}: {e}") from None
    return fault


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
        elif f.kind == "pcie":
            gts, width = f.value
            eff.pcie = (gts or eff.pcie[0], width or eff.pcie[1])
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


def load(out: str, layout: Layout) -> list[tuple[int, Fault]]:
    """Active faults as (id, Fault), each checked against the fabric."""
    doc = read_file(out)
    try:
        return [(int(e["id"]), check(parse(e["spec"]), layout)) for e in doc["faults"]]
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


def edit(out: str, layout: Layout, add: Iterable[str] = (), remove: Iterable[str] = (), clear: bool = False) -> list:
    """Add, remove or clear faults; returns the active specs. All specs are checked before anything changes."""
    to_add = [check(parse(s), layout) for s in add]
    to_remove = [_parse_loose(s) for s in remove]
    with _Locked(out):
        doc = read_file(out)
        entries = [] if clear else list(doc["faults"])
        for f in to_remove:
            kept = [e for e in entries if not _matches(f, parse(e["spec"]))]
            if len(kept) == len(entries):
                raise FaultError(f"{f.spec}: no active fault matches")
            entries = kept
        next_id = int(doc.get("next_id", 1))
        for f in to_add:
            # One fault per target and kind: adding again replaces the value (and re-arms a reset).
            entries = [e for e in entries if not _matches(Fault(f.node, f.device, f.port, f.kind), parse(e["spec"]))]
            entries.append({"id": next_id, "spec": f.spec})
            next_id += 1
        _save(out, {"version": 1, "next_id": next_id, "faults": entries})
    return [e["spec"] for e in entries]


def _parse_loose(spec: str) -> Fault:
    """A spec for `remove` may leave out the value: `cn003/mlx5_0/1:speed` removes any speed fault there."""
    m = _SPEC_RE.match(spec.strip())
    if m and m.group("kind") in _WITH_VALUE and m.group("val") is None:
        port = int(m.group("port")) if m.group("port") else None
        return Fault(m.group("node"), m.group("dev"), port, m.group("kind"))
    return parse(spec)


def _matches(pattern: Fault, f: Fault) -> bool:
    same = (pattern.node, pattern.device, pattern.port, pattern.kind) == (f.node, f.device, f.port, f.kind)
    return same and (pattern.text is None or pattern.text == f.text)
