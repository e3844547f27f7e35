"""A network interface's driver statistics (what `ethtool -S` prints), read from the kernel. Standard library only.

Why the ioctl and not netlink: ethtool's netlink interface (ETHTOOL_MSG_STATS_GET, ETHTOOL_MSG_PAUSE_GET) carries
the standard groups only (IEEE 802.3 MAC and PHY counters, RMON, link-wide pause frames); a driver's own
statistics, where mlx5 keeps PFC pause per priority and its pause-storm events, are reachable only through
SIOCETHTOOL, as `ethtool -S` itself reads them. (What netlink does carry of pause, the link-wide frames, is
read there: collectors/ethnl.py.)

1. ETHTOOL_GSSET_INFO: how many statistics the driver has (the ETH_SS_STATS string set);
2. ETHTOOL_GSTRINGS: their names, ETH_GSTRING_LEN (32) bytes each, NUL-padded;
3. ETHTOOL_GSTATS: their values, one u64 each, in the same order.

Each request is a struct the kernel fills in place (<linux/ethtool.h>), in host byte order, handed over by
pointer in `struct ifreq`'s ifr_data. The requests are built and the replies parsed by the functions below,
apart from the call that carries them (`Kernel.call`), so the bytes can be tested without a NIC
(tests/collectors/test_ethtool.py). A tree that is not this machine's /sys holds the recorded output of
`ethtool -S <if>` instead (`parse_recorded`: the simulator's, and the tests' fixtures).
"""

from __future__ import annotations

import array
import errno
import fcntl
import socket
import struct
from collections.abc import Callable, Collection

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16
IFREQ_SIZE = 40  # struct ifreq on 64-bit Linux: the name, then a 24-byte union (ifr_data is its pointer)
# Far past mlx5's ~2,000 statistics on a 64-channel port: bounds the buffers handed to the kernel.
MAX_STATS = 16_384
_U64_MAX = (1 << 64) - 1

_SSET_INFO = struct.Struct("=IIQ")  # cmd, reserved, sset_mask; then one u32 count per set bit
_GSTRINGS = struct.Struct("=III")  # cmd, string_set, len; then len * ETH_GSTRING_LEN bytes
_GSTATS = struct.Struct("=II")  # cmd, n_stats; then n_stats * u64
_REASONS = {
    errno.ENODEV: "ENODEV (no such network interface)",
    errno.EOPNOTSUPP: "EOPNOTSUPP (the driver has no ethtool statistics)",
    errno.EPERM: "EPERM (operation not permitted)",
    errno.EACCES: "EACCES (permission denied)",
}

Call = Callable[[str, bytearray], None]  # (interface, request) -> the request filled in place, or OSError


class EthtoolError(ValueError):
    """The statistics of an interface could not be read, and why; `code`: the kernel's errno, where it refused."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


# -- the requests and the kernel's replies ---------------------------------------------------


def sset_info_request() -> bytearray:
    return bytearray(_SSET_INFO.pack(ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS) + bytes(4))


def parse_sset_info(reply: bytes) -> int:
    """How many statistics the driver has, from a filled ETHTOOL_GSSET_INFO request."""
    if len(reply) < _SSET_INFO.size + 4:
        raise EthtoolError(f"ETHTOOL_GSSET_INFO: reply of {len(reply)} bytes, expected {_SSET_INFO.size + 4}")
    cmd, _, mask = _SSET_INFO.unpack_from(reply)
    if cmd != ETHTOOL_GSSET_INFO:
        raise EthtoolError(f"ETHTOOL_GSSET_INFO: reply names command {cmd:#x}")
    if not mask & (1 << ETH_SS_STATS):
        raise EthtoolError("the driver reports no statistics (no ETH_SS_STATS string set)")
    (count,) = struct.unpack_from("=I", reply, _SSET_INFO.size)
    if count > MAX_STATS:
        raise EthtoolError(f"the driver reports {count} statistics, more than the {MAX_STATS} read at most")
    return count


def strings_request(count: int) -> bytearray:
    return bytearray(_GSTRINGS.pack(ETHTOOL_GSTRINGS, ETH_SS_STATS, count) + bytes(count * ETH_GSTRING_LEN))


def parse_strings(reply: bytes, count: int) -> list[str]:
    """The statistics' names, from a filled ETHTOOL_GSTRINGS request for `count` of them."""
    cmd, string_set, length = _GSTRINGS.unpack_from(reply)
    if cmd != ETHTOOL_GSTRINGS or string_set != ETH_SS_STATS:
        raise EthtoolError(f"ETHTOOL_GSTRINGS: reply names command {cmd:#x}, string set {string_set}")
    if length != count or len(reply) < _GSTRINGS.size + count * ETH_GSTRING_LEN:
        raise EthtoolError(f"ETHTOOL_GSTRINGS: {length} names where {count} were asked for")
    at = _GSTRINGS.size
    names = []
    for i in range(count):
        raw = reply[at + i * ETH_GSTRING_LEN : at + (i + 1) * ETH_GSTRING_LEN]
        names.append(raw.split(b"\0", 1)[0].decode("ascii", "replace"))
    return names


def stats_request(count: int) -> bytearray:
    return bytearray(_GSTATS.pack(ETHTOOL_GSTATS, count) + bytes(count * 8))


def parse_stats(reply: bytes, count: int) -> tuple[int, ...]:
    """The statistics' values, from a filled ETHTOOL_GSTATS request for `count` of them."""
    cmd, n_stats = _GSTATS.unpack_from(reply)
    if cmd != ETHTOOL_GSTATS:
        raise EthtoolError(f"ETHTOOL_GSTATS: reply names command {cmd:#x}")
    if n_stats != count or len(reply) < _GSTATS.size + count * 8:
        # The set changed between the names and the values (channels added): the names no longer match.
        raise EthtoolError(f"ETHTOOL_GSTATS: {n_stats} values where {count} names were read (the set changed)")
    return struct.unpack_from(f"={count}Q", reply, _GSTATS.size)


def read_stats(ifname: str, wanted: Collection[str], call: Call) -> dict[str, int]:
    """The statistics of `ifname` named in `wanted` that its driver has (three requests through `call`)."""
    try:
        request = sset_info_request()
        call(ifname, request)
        count = parse_sset_info(request)
        request = strings_request(count)
        call(ifname, request)
        names = parse_strings(request, count)
        request = stats_request(count)
        call(ifname, request)
        values = parse_stats(request, count)
    except OSError as e:
        raise EthtoolError(_REASONS.get(e.errno) or e.strerror or type(e).__name__, e.errno) from None
    return {name: value for name, value in zip(names, values, strict=True) if name in wanted}


# -- the kernel -----------------------------------------------------------------------------


class Kernel:
    """SIOCETHTOOL on a datagram socket, as ethtool sends it; no privilege is needed to read statistics."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None

    def call(self, ifname: str, request: bytearray) -> None:
        name = ifname.encode("ascii", "replace")
        if not 0 < len(name) < IFNAMSIZ or b"/" in name or b"\0" in name:
            raise EthtoolError(f"{ifname!r} is not a network interface name")
        if self._sock is None:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # The kernel writes through ifr_data into a buffer of ours: an array's address is stable while it lives.
        buffer = array.array("B", request)
        address, _ = buffer.buffer_info()
        ifreq = struct.pack("16sP", name, address).ljust(IFREQ_SIZE, b"\0")
        fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, ifreq)
        request[:] = buffer.tobytes()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- a recording ----------------------------------------------------------------------------


def parse_recorded(text: str, wanted: Collection[str]) -> dict[str, int]:
    """The statistics named in `wanted` from the output of `ethtool -S <if>` ("NIC statistics:", then one
    `     name: value` a line). A wanted line whose value is not a 64-bit count is an EthtoolError."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "NIC statistics:":
        raise EthtoolError("not the output of `ethtool -S` (no 'NIC statistics:' line first)")
    out: dict[str, int] = {}
    for line in lines[1:]:
        name, sep, value = line.strip().partition(":")
        if not sep or name not in wanted:
            continue
        value = value.strip()
        if not (value.isascii() and value.isdigit()) or int(value) > _U64_MAX:
            raise EthtoolError(f"{name}: not a 64-bit count: {value[:40]!r}")
        out[name] = int(value)
    return out
