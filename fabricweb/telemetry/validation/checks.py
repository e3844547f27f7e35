"""Type and range checks for snapshot fields: each returns the value or raises SnapshotRejected.

`where` names the field as a path into the snapshot (`devices[0].ports[1].counters`),
so the rejection says exactly what was wrong, without echoing megabytes of input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from collectors.wire import AS_LAST_SENT
from fabricweb.inventory.models import NAME_MAX, TEXT_MAX

# A node clock this far ahead is wrong: accepted, its snapshot would make every real poll after
# it "older, nothing stored" until the real time catches up. A few minutes of skew is still stored.
FUTURE_TOLERANCE = timedelta(minutes=10)
EPOCH_FLOOR = datetime(2000, 1, 1, tzinfo=UTC)
MAX_COUNTER = 4 * ((1 << 64) - 1)  # a 64-bit data counter in bytes
MAX_COUNTERS = 512
MAX_LIST = 64
ENUM_ID_HIGH, ENUM_NAME_MAX = 255, 32  # an enum pair's id and name (`{"id": 4, "name": "ACTIVE"}`)
_COUNTER_RE = re.compile(r"[A-Za-z0-9_.-]+")


class SnapshotRejected(ValueError):
    """A snapshot that cannot be stored, and why (in words an operator can act on)."""

    def __init__(self, reason: str, host: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.host = host

    def __str__(self) -> str:
        who = f"snapshot from {self.host}" if self.host else "snapshot"
        return f"{who} rejected: {self.reason}"


def shown(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:  # a value too odd to print is still only a bad value
        return type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def mismatch(where: str, expected: str, value) -> SnapshotRejected:
    return SnapshotRejected(f"{where}: expected {expected}, got {shown(value)}")


def storable(s: str) -> bool:
    """Whether PostgreSQL can store `s` (no NUL, no unpaired surrogate)."""
    if "\x00" in s:
        return False
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(value, where: str, limit: int = TEXT_MAX, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if type(value) is not str or len(value) > limit or not storable(value):
        raise mismatch(where, f"text of at most {limit} characters", value)
    return value


def integer(value, where: str, low: int, high: int, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if type(value) is not int or not low <= value <= high:
        raise mismatch(where, f"an integer from {low} to {high}", value)
    return value


def number(value, where: str, high: float, *, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if type(value) not in (int, float) or not (0 <= value <= high) or not math.isfinite(value):
        raise mismatch(where, f"a number from 0 to {high:g}", value)
    return float(value)


# A GUID as ibnetdiscover prints it and both collectors send it: 0x and 16 lower-case hex digits.
GUID_RE = re.compile(r"0x[0-9a-f]{16}")


def guid(value, where: str, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if type(value) is not str or not GUID_RE.fullmatch(value):
        raise mismatch(where, "a GUID such as 0x0c42a10300a1b2c1", value)
    return value


def mapping(value, where: str, *, optional: bool = False) -> dict:
    if value is None and optional:
        return {}
    if type(value) is not dict:
        raise mismatch(where, "an object", value)
    return value


def sequence(value, where: str, limit: int, *, optional: bool = True) -> list:
    if value is None and optional:
        return []
    if type(value) is not list or len(value) > limit:
        raise mismatch(where, f"a list of at most {limit} items", value)
    return value


def enum(value, where: str) -> tuple[int | None, str | None]:
    """A `{"id": 4, "name": "ACTIVE"}` pair, or (None, None)."""
    if value is None:
        return None, None
    d = mapping(value, where)
    ident = integer(d.get("id"), f"{where}.id", 0, ENUM_ID_HIGH, optional=False)
    return ident, text(d.get("name"), f"{where}.name", ENUM_NAME_MAX)


# Counter names already checked: a fleet reports the same few dozen on every poll.
GOOD_NAMES: set[str] = set()


def counters(value, where: str) -> Mapping[str, int | None]:
    if value is AS_LAST_SENT:  # a port's hw_counters as its agent last sent them (collectors/wire.py)
        return value
    d = mapping(value, where, optional=True)
    if len(d) > MAX_COUNTERS:
        raise mismatch(where, f"at most {MAX_COUNTERS} counters", f"{len(d)} counters")
    for name, v in d.items():
        if name not in GOOD_NAMES:
            if type(name) is not str or len(name) > NAME_MAX or not _COUNTER_RE.fullmatch(name):
                raise mismatch(where, "counter file names", name)
            if len(GOOD_NAMES) < 4096:
                GOOD_NAMES.add(name)
        if v is not None and (type(v) is not int or not 0 <= v <= MAX_COUNTER):
            raise mismatch(f"{where}[{name!r}]", "null or a counter value from 0 to 4·(2^64-1)", v)
    return d


_INTS, _INTS_OR_NONE = frozenset({int}), frozenset({int, type(None)})  # (a bool is not an int here)


def all_counters(values: list) -> bool:
    """Whether every one of `values` is null or a counter value (an int, not a bool, from 0 to MAX_COUNTER), told
    with a few builtins over the whole list instead of a step a value: a sweep's rows, a wire port's columns."""
    kinds = set(map(type, values))
    if kinds == _INTS:
        known = values
    elif kinds <= _INTS_OR_NONE:
        known = [v for v in values if v is not None]
    else:
        return False
    return not known or (min(known) >= 0 and max(known) <= MAX_COUNTER)


def scalars(value, where: str) -> dict | None:
    """A flat object of scalars (the `verbs` view), or None."""
    if value is None:
        return None
    d = mapping(value, where)
    if len(d) > MAX_LIST:
        raise mismatch(where, f"at most {MAX_LIST} fields", f"{len(d)} fields")
    for key, v in d.items():
        text(key, f"{where} key", NAME_MAX, optional=False)
        _scalar(v, f"{where}[{key!r}]")
    return d


def _scalar(v, where: str) -> None:
    if v is None or type(v) is bool:
        return
    if type(v) is int:
        integer(v, where, -(1 << 63), (1 << 63) - 1)
    elif type(v) is float:
        if not math.isfinite(v):
            raise mismatch(where, "a finite number", v)
    else:
        text(v, where)


def disagreements(value, where: str) -> list[dict]:
    """Rebuilt from the three keys a disagreement has: anything else a node adds is not stored."""
    items = sequence(value, where, MAX_LIST)
    out = []
    for i, item in enumerate(items):
        d = mapping(item, f"{where}[{i}]")
        field = text(d.get("field"), f"{where}[{i}].field", NAME_MAX, optional=False)
        _scalar(d.get("sysfs"), f"{where}[{i}].sysfs")
        _scalar(d.get("verbs"), f"{where}[{i}].verbs")
        out.append({"field": field, "sysfs": d.get("sysfs"), "verbs": d.get("verbs")})
    return out


def names(value, where: str, limit: int = MAX_LIST) -> list[str]:
    items = sequence(value, where, limit)
    for i, item in enumerate(items):
        text(item, f"{where}[{i}]", NAME_MAX, optional=False)
    return items


def collected_at(value, now: datetime) -> datetime:
    text(value, "collected_at", 64, optional=False)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise mismatch("collected_at", "an ISO 8601 time such as 2026-01-31T12:00:00.000000Z", value) from None
    if when.tzinfo is None:
        raise mismatch("collected_at", "a time with a zone (Z or +00:00)", value)
    try:
        when = when.astimezone(UTC)
    except OverflowError:  # a year-1 or year-9999 time shifted out of range by its offset
        raise mismatch("collected_at", "a time between the years 2000 and 9999", value) from None
    if when < EPOCH_FLOOR:
        raise SnapshotRejected(f"collected_at {value} is not a plausible time (before {EPOCH_FLOOR:%Y})")
    if when > now + FUTURE_TOLERANCE:
        ahead = (when - now).total_seconds()
        raise SnapshotRejected(
            f"collected_at {value} is {_duration(ahead)} ahead of this server's clock "
            f"({now:%Y-%m-%dT%H:%M:%SZ}; at most {_duration(FUTURE_TOLERANCE.total_seconds())} is accepted): "
            "check the node's clock (NTP)"
        )
    return when


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
