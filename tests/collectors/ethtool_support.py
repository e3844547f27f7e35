"""A kernel that answers SIOCETHTOOL in bytes, for the ethtool reader's tests (collectors/ethtool.py), and the
recorded netlink replies that answer ethtool's netlink requests (collectors/ethnl.py)."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

# <linux/ethtool.h>, written out here rather than imported, so the tests check the module's numbers.
GSTRINGS, GSTATS, GSSET_INFO = 0x1B, 0x1D, 0x37
NETLINK = Path(__file__).resolve().parents[1] / "fixtures" / "ethtool" / "netlink"
RECORDED_FAMILY = 0x15  # the ethtool family's id on the kernel the replies were recorded from


def netlink_bytes(name: str) -> bytes:
    """A netlink message kept as hex in tests/fixtures/ethtool/netlink/<name>.hex ('#' starts a note)."""
    text = (NETLINK / f"{name}.hex").read_text()
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


class FakeNetlink:
    """Answers CTRL_CMD_GETFAMILY with the recorded reply naming `family` as the ethtool family's id, each PAUSE_GET
    to that id with `pause` (a fixture's name, or bytes), and one to another id with ENOENT, as genetlink answers a
    request to no family; sequence numbers set to the request's as the kernel's would be. The requests' types
    (0x10: the controller) and the names asked are kept."""

    def __init__(self, pause: str | bytes, family: int = RECORDED_FAMILY) -> None:
        self.pause = netlink_bytes(pause) if isinstance(pause, str) else pause
        self.family = family
        self.types: list[int] = []
        self.asked: list[str] = []

    def call(self, message: bytes) -> bytes:
        (kind,) = struct.unpack_from("<H", message, 4)
        (seq,) = struct.unpack_from("<I", message, 8)
        self.types.append(kind)
        if kind == 0x10:  # the controller
            reply = bytearray(netlink_bytes("ctrl-getfamily-ethtool"))
            struct.pack_into("<H", reply, 36, self.family)  # CTRL_ATTR_FAMILY_ID's value
        elif kind != self.family:
            reply = bytearray(netlink_bytes("pause-get-lo-eopnotsupp"))  # its NLMSG_ERROR frame, -ENOENT in it
            struct.pack_into("<i", reply, 16, -errno.ENOENT)
        else:
            self.asked.append(message[28:].split(b"\0", 1)[0].decode())  # DEV_NAME, first in the header nest
            reply = bytearray(self.pause)
            if len(reply) >= 6 and struct.unpack_from("<H", reply, 4)[0] == RECORDED_FAMILY:
                struct.pack_into("<H", reply, 4, self.family)  # a reply's type is the family's id
        return bytes(reply[:8] + struct.pack("<I", seq) + reply[12:]) if len(reply) >= 12 else bytes(reply)


class FakeKernel:
    """Answers SIOCETHTOOL as the kernel's ethtool_get_sset_info, ethtool_get_strings and ethtool_get_stats do:
    the request's header read, the struct written back in place (little-endian, as on x86-64 and arm64)."""

    def __init__(self, stats: dict[str, int], grow_after_strings: bool = False, sets: int = 1 << 1) -> None:
        self.stats, self.grow, self.sets = dict(stats), grow_after_strings, sets
        self.calls: list[tuple[str, int, bytes]] = []

    def call(self, ifname: str, request: bytearray) -> None:
        (cmd,) = struct.unpack_from("<I", request)
        self.calls.append((ifname, cmd, bytes(request)))
        names = list(self.stats)
        if cmd == GSSET_INFO:
            _, _, mask = struct.unpack_from("<IIQ", request)
            mask &= self.sets
            counts = struct.pack("<I", len(names)) if mask else b""
            reply = struct.pack("<IIQ", GSSET_INFO, 0, mask) + counts
        elif cmd == GSTRINGS:
            _, string_set, length = struct.unpack_from("<III", request)
            assert string_set == 1 and length == len(names)
            reply = struct.pack("<III", GSTRINGS, 1, length) + b"".join(n.encode().ljust(32, b"\0") for n in names)
            if self.grow:
                self.stats["ch64_events"] = 0  # channels added between the two requests
        elif cmd == GSTATS:
            _, asked = struct.unpack_from("<II", request)
            values = list(self.stats.values())
            assert len(request) == 8 + 8 * asked
            reply = struct.pack("<II", GSTATS, len(values)) + struct.pack(f"<{len(values)}Q", *values)[: 8 * asked]
        else:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        request[: len(reply)] = reply
