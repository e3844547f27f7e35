"""The samples of one node's poll packed into bytes: one row per node-poll instead of one per port.

A row per port cost ~255 B per sample on PostgreSQL, most of it tuple header, index entry
and 8-byte zeros (BENCHMARKS.md, "Bytes per sample"). Packed, an idle error counter costs
one byte and the row overhead is paid once per node and poll.

Layout (version 1), all integers little-endian base-128 varints unless said otherwise:

    version byte (1)
    per port, in port id order:
        port id minus the previous entry's (the first: minus 0)
        length of the rest of the entry in bytes (so a reader skips other ports unparsed)
        flags byte: 1 reset, 2 capped, 4 interval known, 8 interval in whole ms (else µs), 16 wide link,
            32 interval negative (the clock stepped back)
        interval's magnitude, when known
        link: 2 bytes (state 3 bits, phys state 3 bits, speed rank 4 bits, lanes 5 bits;
              all-ones = None), or when a value does not fit (wide): 4 varints, value + 1, 0 = None
        bitmap of the unknown (None) deltas, bit i = DELTA_COLUMNS[i]
        each known delta in DELTA_COLUMNS order, zigzag

An entry is `(port_id, head, deltas)`: head is (interval_s, state_id, phys_state_id, speed,
lanes, reset, capped) and deltas is in DELTA_COLUMNS order, None when unknown, never 0.
Intervals keep a resolution of one microsecond, that of the timestamps they come from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from collectors.link import SPEEDS

from .columns import DELTA_COLUMNS

VERSION = 1
HEAD = ("interval_s", "state_id", "phys_state_id", "speed", "lanes", "reset", "capped")  # an entry's head, in order
COUNTERS = len(DELTA_COLUMNS)

RESET, CAPPED, INTERVAL, MILLIS, WIDE, BACKWARDS = 1, 2, 4, 8, 16, 32
_SPEED_RANK = {s.name: i for i, s in enumerate(SPEEDS)}
_SPEED_NAME = [s.name for s in SPEEDS]
_NONE3, _NONE4, _NONE5 = 7, 15, 31  # the all-ones value of each narrow link field means None

Entry = tuple[int, tuple, Sequence[int | None]]


class PackError(ValueError):
    """Bytes that are not a packed row of this version, or a value that cannot be packed."""


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def _link(out: bytearray, state, phys, speed, lanes) -> bool:
    """Append the link; True when it took the wide form."""
    rank = None if speed is None else _SPEED_RANK.get(speed)
    if speed is not None and rank is None:
        raise PackError(f"speed {speed!r} is not one of {', '.join(_SPEED_NAME)}")
    if _fits(state, _NONE3) and _fits(phys, _NONE3) and _fits(lanes, _NONE5):
        s = _NONE3 if state is None else state
        p = _NONE3 if phys is None else phys
        r = _NONE4 if rank is None else rank
        w = _NONE5 if lanes is None else lanes
        out += (s | p << 3 | r << 6 | w << 10).to_bytes(2, "little")
        return False
    for value in (state, phys, rank, lanes):
        if value is not None and value < 0:
            raise PackError(f"link value {value} is negative")
        _varint(out, 0 if value is None else value + 1)
    return True


def _fits(value: int | None, none: int) -> bool:
    return value is None or 0 <= value < none


def _entry(port_id: int, head: tuple, deltas: tuple) -> bytearray:
    interval_s, state, phys, speed, lanes, reset, capped = head
    if len(deltas) != COUNTERS:
        raise PackError(f"{len(deltas)} deltas, expected {COUNTERS} ({', '.join(DELTA_COLUMNS)})")
    body = bytearray(1)
    flags = (RESET if reset else 0) | (CAPPED if capped else 0)
    if interval_s is not None:
        us = round(interval_s * 1_000_000)
        flags |= INTERVAL
        if us < 0:
            flags |= BACKWARDS
            us = -us
        if us % 1000 == 0:
            flags |= MILLIS
            us //= 1000
        _varint(body, us)
    if _link(body, state, phys, speed, lanes):
        flags |= WIDE
    body[0] = flags
    unknown = 0
    if None in deltas:
        for i, d in enumerate(deltas):
            if d is None:
                unknown |= 1 << i
    _varint(body, unknown)
    for d in deltas:
        if d is None:
            continue
        zigzag = d << 1 if d >= 0 else (-d << 1) - 1
        while zigzag > 0x7F:  # (_varint, inlined: most deltas are error counters that did not move: one byte)
            body.append(zigzag & 0x7F | 0x80)
            zigzag >>= 7
        body.append(zigzag)
    return body


def pack(entries: Iterable[Entry]) -> bytes:
    """The entries of one node-poll as bytes (sorted by port id; several entries of one port are kept)."""
    out = bytearray([VERSION])
    previous = 0
    for port_id, head, deltas in sorted(entries, key=_port_id):
        if port_id < 0:
            raise PackError(f"port id {port_id} is negative")
        body = _entry(port_id, head, deltas)
        _varint(out, port_id - previous)
        _varint(out, len(body))
        out += body
        previous = port_id
    return bytes(out)


def _port_id(entry: Entry) -> int:
    return entry[0]


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    b = data[i]
    if b < 0x80:
        return b, i + 1
    n, shift = b & 0x7F, 7
    while True:
        i += 1
        b = data[i]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i + 1
        shift += 7


def _decode(data: bytes, i: int, end: int) -> tuple[tuple, tuple]:
    flags = data[i]
    i += 1
    interval_s = None
    if flags & INTERVAL:
        n, i = _read_varint(data, i)
        if flags & BACKWARDS:
            n = -n
        interval_s = n / 1000 if flags & MILLIS else n / 1_000_000
    if flags & WIDE:
        link = []
        for _ in range(4):
            v, i = _read_varint(data, i)
            link.append(None if v == 0 else v - 1)
        state, phys, rank, lanes = link
    else:
        bits = data[i] | data[i + 1] << 8
        i += 2
        state, phys, rank, lanes = bits & 7, bits >> 3 & 7, bits >> 6 & 15, bits >> 10 & 31
        state = None if state == _NONE3 else state
        phys = None if phys == _NONE3 else phys
        rank = None if rank == _NONE4 else rank
        lanes = None if lanes == _NONE5 else lanes
    if rank is not None and rank >= len(_SPEED_NAME):
        raise PackError(f"speed rank {rank} unknown")
    speed = None if rank is None else _SPEED_NAME[rank]
    unknown, i = _read_varint(data, i)
    deltas = []
    for k in range(COUNTERS):
        if unknown >> k & 1:
            deltas.append(None)
            continue
        b = data[i]
        if b < 0x80:  # most deltas: one byte
            i += 1
            z = b
        else:
            z, i = _read_varint(data, i)
        deltas.append(z >> 1 if not z & 1 else -((z + 1) >> 1))
    if i != end:
        raise PackError(f"entry ends at byte {i}, its length says {end}")
    return (interval_s, state, phys, speed, lanes, bool(flags & RESET), bool(flags & CAPPED)), tuple(deltas)


def _entries(data: bytes, port_id: int | None) -> list[Entry]:
    if not data or data[0] != VERSION:
        raise PackError(f"not a packed row of version {VERSION}: starts with {bytes(data[:1])!r}")
    out = []
    i, pid, size = 1, 0, len(data)
    try:
        while i < size:
            step, i = _read_varint(data, i)
            length, i = _read_varint(data, i)
            pid += step
            end = i + length
            if end > size:
                raise PackError(f"entry of port {pid} runs past the end ({end} > {size} bytes)")
            if port_id is None or pid == port_id:
                head, deltas = _decode(data, i, end)
                out.append((pid, head, deltas))
            elif pid > port_id:
                break  # entries are in port id order
            i = end
    except IndexError:
        raise PackError(f"truncated packed row ({size} bytes)") from None
    return out


def unpack(data: bytes) -> list[Entry]:
    """Every entry of a packed row, in port id order."""
    return _entries(data, None)


def entries_of(data: bytes, port_id: int) -> list[Entry]:
    """The entries of one port in a packed row (usually one, none if the port was not polled)."""
    return _entries(data, port_id)
