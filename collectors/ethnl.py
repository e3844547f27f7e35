"""A network interface's link-wide pause statistics through ethtool's generic-netlink interface. Standard library.

What netlink carries of a port's pause is the standard's pair only: ETHTOOL_MSG_PAUSE_GET with the STATS flag
answers the IEEE 802.3 MAC control counters (aPAUSEMACCtrlFramesTransmitted and ...Received; mlx5 reads them
from its PPCNT IEEE 802.3 group, the values `ethtool -S` prints as `tx_pause_ctrl_phy` and `rx_pause_ctrl_phy`).
It carries no per-priority PFC counter and no pause-storm event: those stay with the driver's own statistics
(collectors/ethtool.py, SIOCETHTOOL), and collectors/roce.py reads both.

Two requests on one NETLINK_GENERIC socket, each a `struct nlmsghdr`, a `struct genlmsghdr` and netlink
attributes (type-length-value, 4-byte aligned), in host byte order:

1. CTRL_CMD_GETFAMILY to the controller (GENL_ID_CTRL) naming "ethtool": the family's id, which the kernel
   numbers at boot (<linux/genetlink.h>), so it is asked once per process (RESOLVED) and again only when a
   request to it fails as a request to no such family would (STALE);
2. ETHTOOL_MSG_PAUSE_GET to that id, its ETHTOOL_A_PAUSE_HEADER nest holding the interface's name and
   ETHTOOL_FLAG_STATS. The reply, ETHTOOL_MSG_PAUSE_GET_REPLY, holds the nest ETHTOOL_A_PAUSE_STATS, whose
   ETHTOOL_A_PAUSE_STAT_TX_FRAMES and ..._RX_FRAMES are u64 (<linux/ethtool_netlink.h>); a counter the
   driver does not keep is left out. A driver with no pause at all answers NLMSG_ERROR with -EOPNOTSUPP.

As in collectors/ethtool.py the requests are built and the replies parsed apart from the socket (`Netlink`),
so the bytes are tested without a NIC, on replies recorded from a kernel (tests/fixtures/ethtool/netlink/).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .ethtool import IFNAMSIZ, EthtoolError

NETLINK_GENERIC = 16  # <linux/netlink.h>; Python's socket module does not name it
SOL_NETLINK = 270
NETLINK_EXT_ACK = 11
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_ACK_TLVS = 0x200  # an error carries extended-ACK attributes after the request it quotes
NLM_F_CAPPED = 0x100  # ... and quotes the request's header only
NLMSGERR_ATTR_MSG = 1
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
FAMILY = "ethtool"
ETHTOOL_GENL_VERSION = 1
ETHTOOL_MSG_PAUSE_GET = 21
ETHTOOL_MSG_PAUSE_GET_REPLY = 22
ETHTOOL_A_HEADER_DEV_NAME = 2
ETHTOOL_A_HEADER_FLAGS = 3
ETHTOOL_FLAG_STATS = 1 << 2
ETHTOOL_A_PAUSE_HEADER = 1
ETHTOOL_A_PAUSE_STATS = 5
ETHTOOL_A_PAUSE_STAT_TX_FRAMES = 2
ETHTOOL_A_PAUSE_STAT_RX_FRAMES = 3
# What PAUSE_GET meets when the id it was sent to names no family now (genetlink: ENOENT) or another family whose
# command 21 takes other attributes (EINVAL): the id is asked again, once, and the request sent again if it changed.
STALE = frozenset({errno.ENOENT, errno.EINVAL})
RECV_BYTES = 65_536
TIMEOUT_S = 2.0  # a poll never waits on the kernel longer

_NLMSGHDR = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_GENLMSGHDR = struct.Struct("=BBH")  # command, version, reserved
_NLATTR = struct.Struct("=HH")  # length (header included), type
_NESTED = 1 << 15

Call = Callable[[bytes], bytes]  # (request) -> the kernel's reply, or OSError


@dataclass(frozen=True, slots=True)
class PauseStats:
    """A port's link-wide pause frames since the driver started counting; None: the driver keeps no such count."""

    tx_frames: int | None
    rx_frames: int | None


# -- netlink's framing ----------------------------------------------------------------------


def _align(n: int) -> int:
    return (n + 3) & ~3


def attr(kind: int, payload: bytes) -> bytes:
    raw = _NLATTR.pack(_NLATTR.size + len(payload), kind) + payload
    return raw.ljust(_align(len(raw)), b"\0")


def attrs(data: bytes, what: str) -> Iterator[tuple[int, bytes]]:
    """The (type, payload) of each attribute in `data`; a length that runs short or past the end is an error."""
    at = 0
    while at < len(data):
        if len(data) - at < _NLATTR.size:
            raise EthtoolError(f"{what}: truncated attribute header at byte {at} of {len(data)}")
        length, kind = _NLATTR.unpack_from(data, at)
        if length < _NLATTR.size or at + length > len(data):
            raise EthtoolError(f"{what}: attribute {kind & NLA_TYPE_MASK} says {length} bytes, {len(data) - at} left")
        yield kind & NLA_TYPE_MASK, bytes(data[at + _NLATTR.size : at + length])
        at += _align(length)


def request(kind: int, seq: int, command: int, version: int, body: bytes) -> bytes:
    payload = _GENLMSGHDR.pack(command, version, 0) + body
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(payload), kind, NLM_F_REQUEST, seq, 0) + payload


def answer(reply: bytes, seq: int, what: str) -> tuple[int, bytes] | None:
    """The (type, payload) of the message in `reply` that answers request `seq`; None for the kernel's
    EOPNOTSUPP; any other error the kernel sends is an EthtoolError in words."""
    at = 0
    while at < len(reply):
        if len(reply) - at < _NLMSGHDR.size:
            raise EthtoolError(f"{what}: truncated netlink header ({len(reply) - at} bytes)")
        length, kind, flags, got_seq, _ = _NLMSGHDR.unpack_from(reply, at)
        if length < _NLMSGHDR.size or at + length > len(reply):
            raise EthtoolError(f"{what}: netlink message says {length} bytes, {len(reply) - at} received")
        payload = bytes(reply[at + _NLMSGHDR.size : at + length])
        at += _align(length)
        if got_seq != seq or kind == NLMSG_DONE:
            continue
        if kind == NLMSG_ERROR:
            return _error(payload, flags, what)
        return kind, payload
    raise EthtoolError(f"{what}: no answer to request {seq} in {len(reply)} bytes")


def _error(payload: bytes, flags: int, what: str) -> None:
    if len(payload) < 4 + _NLMSGHDR.size:
        raise EthtoolError(f"{what}: truncated netlink error ({len(payload)} bytes)")
    (code,) = struct.unpack_from("=i", payload)
    if code == 0:
        raise EthtoolError(f"{what}: an acknowledgement where a reply was expected")
    if -code == errno.EOPNOTSUPP:
        return None
    reason = _REASONS.get(-code) or f"{errno.errorcode.get(-code, -code)} ({os.strerror(-code)})"
    said = _ext_ack_message(payload, flags)
    raise EthtoolError(f"{what}: {reason}" + (f": {said}" if said else ""), -code)


def _ext_ack_message(payload: bytes, flags: int) -> str | None:
    """The kernel's own words in an extended ACK (NETLINK_EXT_ACK), where it sent some."""
    if not flags & NLM_F_ACK_TLVS:
        return None
    (quoted,) = struct.unpack_from("=I", payload, 4)
    at = 4 + (_NLMSGHDR.size if flags & NLM_F_CAPPED else _align(quoted))
    try:
        for kind, value in attrs(payload[at:], "extended ACK"):
            if kind == NLMSGERR_ATTR_MSG:
                return value.split(b"\0", 1)[0].decode("utf-8", "replace")
    except EthtoolError:
        return None
    return None


_REASONS = {
    errno.ENODEV: "ENODEV (no such network interface)",
    errno.ENOENT: "ENOENT (the kernel has no such generic-netlink family)",
    errno.EPERM: "EPERM (operation not permitted)",
}


def _u64(value: bytes, what: str) -> int:
    if len(value) != 8:
        raise EthtoolError(f"{what}: a u64 of {len(value)} bytes")
    return struct.unpack("=Q", value)[0]


# -- the two requests and their replies -----------------------------------------------------


def family_request(seq: int) -> bytes:
    return request(GENL_ID_CTRL, seq, CTRL_CMD_GETFAMILY, 1, attr(CTRL_ATTR_FAMILY_NAME, FAMILY.encode() + b"\0"))


def parse_family(reply: bytes, seq: int) -> int | None:
    """The ethtool family's id from the controller's reply; None where the kernel has none (before 5.6)."""
    what = "CTRL_CMD_GETFAMILY ethtool"
    try:
        got = answer(reply, seq, what)
    except EthtoolError as e:
        if e.code == errno.ENOENT:
            return None
        raise
    if got is None:
        return None
    kind, payload = got
    if kind != GENL_ID_CTRL or len(payload) < _GENLMSGHDR.size:
        raise EthtoolError(f"{what}: reply of type {kind:#x}, {len(payload)} bytes")
    for a, value in attrs(payload[_GENLMSGHDR.size :], what):
        if a == CTRL_ATTR_FAMILY_ID:
            if len(value) != 2:
                raise EthtoolError(f"{what}: a family id of {len(value)} bytes")
            return struct.unpack("=H", value)[0]
    raise EthtoolError(f"{what}: the reply names no family id")


def pause_request(family: int, ifname: str, seq: int) -> bytes:
    name = ifname.encode("ascii", "replace")
    if not 0 < len(name) < IFNAMSIZ or b"/" in name or b"\0" in name:
        raise EthtoolError(f"{ifname!r} is not a network interface name")
    header = attr(ETHTOOL_A_HEADER_DEV_NAME, name + b"\0") + attr(
        ETHTOOL_A_HEADER_FLAGS, struct.pack("=I", ETHTOOL_FLAG_STATS)
    )
    body = attr(ETHTOOL_A_PAUSE_HEADER | _NESTED, header)
    return request(family, seq, ETHTOOL_MSG_PAUSE_GET, ETHTOOL_GENL_VERSION, body)


def parse_pause(reply: bytes, family: int, seq: int) -> PauseStats | None:
    """The pause statistics in a PAUSE_GET reply; None where the driver has no pause (EOPNOTSUPP) or its reply
    holds no statistics (a driver without get_pause_stats, or a kernel before 5.10)."""
    what = "ETHTOOL_MSG_PAUSE_GET"
    got = answer(reply, seq, what)
    if got is None:
        return None
    kind, payload = got
    if kind != family or len(payload) < _GENLMSGHDR.size:
        raise EthtoolError(f"{what}: reply of type {kind:#x} ({len(payload)} bytes), the family is {family:#x}")
    (command,) = struct.unpack_from("=B", payload)
    if command != ETHTOOL_MSG_PAUSE_GET_REPLY:
        raise EthtoolError(f"{what}: reply names command {command}")
    nest = next((v for a, v in attrs(payload[_GENLMSGHDR.size :], what) if a == ETHTOOL_A_PAUSE_STATS), None)
    if nest is None:
        return None
    stats = dict(attrs(nest, "ETHTOOL_A_PAUSE_STATS"))
    tx, rx = stats.get(ETHTOOL_A_PAUSE_STAT_TX_FRAMES), stats.get(ETHTOOL_A_PAUSE_STAT_RX_FRAMES)
    return PauseStats(
        tx_frames=None if tx is None else _u64(tx, "ETHTOOL_A_PAUSE_STAT_TX_FRAMES"),
        rx_frames=None if rx is None else _u64(rx, "ETHTOOL_A_PAUSE_STAT_RX_FRAMES"),
    )


# -- the kernel -----------------------------------------------------------------------------


class ResolvedFamily:
    """The ethtool family's id as this process's kernel numbered it: None until asked, then (id,), (None,) where
    the kernel has no such family. Owner: this module; one value per process; forget() when a request finds it
    stale (Netlink.pause_stats), and in the tests after each test. Only an answer is kept: a request that failed
    is asked again on the next use. One tuple, set whole, so a thread never reads half of it."""

    __slots__ = ("known",)

    def __init__(self) -> None:
        self.known: tuple[int | None] | None = None

    def forget(self) -> None:
        self.known = None


RESOLVED = ResolvedFamily()


class Netlink:
    """A NETLINK_GENERIC socket, opened on first use (one a poll: polls may overlap in the agent's threads, and a
    reply that came after its request timed out would wait in a kept socket for the next request); the ethtool
    family's id is asked once a process (RESOLVED)."""

    def __init__(self, call: Call | None = None) -> None:
        self._call = call
        self._sock: socket.socket | None = None
        self._seq = 0

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def call(self, message: bytes) -> bytes:
        if self._call is not None:
            return self._call(message)
        if self._sock is None:
            self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
            self._sock.settimeout(TIMEOUT_S)
            with contextlib.suppress(OSError):  # the kernel's own words with an error, where it offers them
                self._sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
            self._sock.bind((0, 0))
        self._sock.send(message)
        return self._sock.recv(RECV_BYTES)

    def family(self) -> int | None:
        known = RESOLVED.known
        if known is None:
            seq = self._next()
            known = (parse_family(self._kernel(family_request(seq)), seq),)
            RESOLVED.known = known
        return known[0]

    def pause_stats(self, ifname: str) -> PauseStats | None:
        """`ifname`'s link-wide pause frames; None where the kernel or the driver says none (an EthtoolError
        when the kernel refuses otherwise or its reply does not parse)."""
        family = self.family()
        if family is None:
            return None
        try:
            return self._pause(family, ifname)
        except EthtoolError as e:
            if e.code not in STALE:
                raise
            RESOLVED.forget()
            if self.family() == family:  # the id holds: the refusal was the request's own
                raise
        family = self.family()
        return None if family is None else self._pause(family, ifname)

    def _pause(self, family: int, ifname: str) -> PauseStats | None:
        seq = self._next()
        return parse_pause(self._kernel(pause_request(family, ifname, seq)), family, seq)

    def _kernel(self, message: bytes) -> bytes:
        try:
            return self.call(message)
        except OSError as e:
            raise EthtoolError(f"netlink: {e.strerror or type(e).__name__}", e.errno) from None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
