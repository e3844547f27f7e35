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


def netlink_bytes(name: str) -> bytes:
    """A netlink message kept as hex in tests/fixtures/ethtool/netlink/<name>.hex ('#' starts a note)."""
    text = (NETLINK / f"{name}.hex").read_text()
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


class FakeNetlink:
    """Answers CTRL_CMD_GETFAMILY with the recorded reply and each PAUSE_GET with `pause` (a fixture's name, or
    bytes), its sequence number set to the request's as the kernel's would be; the names asked are kept."""

    def __init__(self, pause: str | bytes) -> None:
        self.pause = netlink_bytes(pause) if isinstance(pause, str) else pause
        self.asked: list[str] = []

    def call(self, message: bytes) -> bytes:
        (seq,) = struct.unpack_from("<I", message, 8)
        if struct.unpack_from("<H", message, 4)[0] == 0x10:  # the controller
            reply = netlink_bytes("ctrl-getfamily-ethtool")
        else:
            self.asked.append(message[28:].split(b"\0", 1)[0].decode())  # DEV_NAME, first in the header nest
            reply = self.pause
        return reply[:8] + struct.pack("<I", seq) + reply[12:] if len(reply) >= 12 else reply


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
