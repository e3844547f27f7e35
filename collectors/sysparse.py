"""Parsing one sysfs file's text into a typed value: each parser raises Unparsable (or RateError) saying why.

Standard library only; collectors/sysfs.py reads the files and turns a failure into a ReadError naming the file.
"""

from __future__ import annotations

import re

from .facts import MAX_PCI_GTS
from .model import Enum

# re.ASCII: \d would otherwise take any Unicode digit ('٤: ACTIVE'), which int() accepts.
_ENUM_RE = re.compile(r"^(\d+): ?(.*)$", re.ASCII)
_HEX_RE = re.compile(r"0x[0-9a-fA-F]{1,16}")
_GID_RE = re.compile(r"(?:[0-9a-fA-F]{4}:){7}[0-9a-fA-F]{4}")
PCI_ADDR_RE = re.compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_PCI_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?) ?GT/s(?: PCIe)?$", re.ASCII)
_NUMA_RE = re.compile(r"-?\d+", re.ASCII)
_U64_MAX = (1 << 64) - 1


class Unparsable(ValueError):
    pass


def parse_int(text: str) -> int:
    # int() would also take '+5', ' 5', '5_000' and non-ASCII digits; sysfs never prints those.
    if not (text.isascii() and text.isdigit()):
        raise Unparsable(f"not a decimal number: {text[:40]!r}")
    value = int(text)
    if value > _U64_MAX:  # no sysfs value is wider; ingest stores 64-bit integers
        raise Unparsable(f"out of range for a 64-bit value: {text[:40]!r}")
    return value


def parse_hex(text: str) -> int:
    # int(text, 16) would take '0x_1' and any length: a 4 KiB hex number has more than
    # 4300 decimal digits, which json.dumps refuses, losing the whole snapshot.
    if _HEX_RE.fullmatch(text) is None:
        raise Unparsable(f"not a 64-bit hexadecimal number: {text[:40]!r}")
    return int(text, 16)


def _gid_guid(text: str) -> str | None:
    """The port GUID in GID 0 (`fe80:0000:0000:0000:0c42:a103:00a1:b2c1`): its lower 64 bits, as
    `0x0c42a10300a1b2c1`, the form ibnetdiscover prints and the fabric collector sends. All zeros: none."""
    if _GID_RE.fullmatch(text) is None:
        raise Unparsable(f"not a GID (8 groups of 4 hex digits): {text[:48]!r}")
    guid = int("".join(text.split(":")[4:]), 16)
    return f"0x{guid:016x}" if guid else None


def _enum(text: str) -> Enum:
    m = _ENUM_RE.match(text)
    if m is None:
        raise Unparsable(f"expected '<id>: <name>', got {text[:40]!r}")
    return Enum(parse_int(m.group(1)), m.group(2))


def _counter(text: str) -> int:
    if text.startswith("N/A"):
        raise Unparsable("N/A (no PMA): the device has no performance management agent for this counter")
    return parse_int(text)


def parse_pci_speed(text: str) -> float | None:
    if text == "Unknown":  # virtual functions
        return None
    m = _PCI_SPEED_RE.match(text)
    if m is None:
        raise Unparsable(f"unrecognised PCIe link speed {text[:40]!r}")
    gts = float(m.group(1))
    if gts > MAX_PCI_GTS:  # (hundreds of digits read as infinity, which JSON cannot hold)
        raise Unparsable(f"PCIe link speed {text[:40]!r} past any PCIe generation's")
    return gts


def parse_numa(text: str) -> int | None:
    value = int(text) if _NUMA_RE.fullmatch(text) else None
    if value is None:
        raise Unparsable(f"not a NUMA node number: {text[:40]!r}")
    return None if value < 0 else value


def parse_text(text: str) -> str:
    return text
