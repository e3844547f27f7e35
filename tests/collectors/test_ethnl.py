"""Covers collectors/ethnl.py: ethtool's generic-netlink pause statistics on the messages' bytes: the requests as
sent, replies recorded from a kernel (the ethtool family, EOPNOTSUPP from lo and a virtio NIC, ENODEV with the
kernel's own words), an mlx5-like reply built by hand from the uapi layout, malformed and truncated replies, and
this machine's kernel."""

from __future__ import annotations

import errno
import socket
import struct
import sys

import pytest

from collectors import ethnl
from collectors.ethtool import EthtoolError
from tests.collectors.ethtool_support import NETLINK, RECORDED_FAMILY, FakeNetlink, netlink_bytes

little_endian = pytest.mark.skipif(sys.byteorder != "little", reason="the messages below are little-endian")
FAMILY = RECORDED_FAMILY  # the ethtool family's id on the kernel the replies were recorded from
MLX5 = "pause-get-mlx5-stats"


@little_endian
def test_the_requests_bytes():
    # nlmsghdr (length, GENL_ID_CTRL, NLM_F_REQUEST, sequence, port 0), genlmsghdr (GETFAMILY, v1), the name.
    assert ethnl.family_request(1) == bytes.fromhex(
        "20000000 1000 0100 01000000 00000000 03 01 0000 0c00 0200 657468746f6f6c00"
    )
    # PAUSE_GET (21, v1) to the family; its header nest (1 | NLA_F_NESTED) names lo and asks for statistics (4).
    assert ethnl.pause_request(FAMILY, "lo", 2) == bytes.fromhex(
        "28000000 1500 0100 02000000 00000000 15 01 0000 1400 0180 0700 0200 6c6f0000 0800 0300 04000000"
    )
    # As the recording's note says it was sent.
    note = (NETLINK / "pause-get-nosuchnic0-enodev.hex").read_text()
    assert f"# The request sent: {ethnl.pause_request(FAMILY, 'nosuchnic0', 3).hex()}\n" in note
    with pytest.raises(EthtoolError, match="not a network interface name"):
        ethnl.pause_request(FAMILY, "a" * 16, 4)


@little_endian
def test_the_recorded_family_reply_gives_the_ethtool_familys_id():
    assert ethnl.parse_family(netlink_bytes("ctrl-getfamily-ethtool"), 1) == FAMILY
    with pytest.raises(EthtoolError, match="no answer to request 2"):
        ethnl.parse_family(netlink_bytes("ctrl-getfamily-ethtool"), 2)


@little_endian
def test_a_kernel_without_the_family_or_a_driver_without_pause_is_none_not_an_error():
    for recorded in ("pause-get-lo-eopnotsupp", "pause-get-eth0-eopnotsupp"):
        assert ethnl.parse_pause(netlink_bytes(recorded), FAMILY, 2) is None
    # The controller's ENOENT (a kernel before 5.6 has no ethtool family), made from the recorded error's frame.
    enoent = bytearray(netlink_bytes("pause-get-lo-eopnotsupp"))
    struct.pack_into("<iI", enoent, 16, -errno.ENOENT, 0)
    assert ethnl.parse_family(bytes(enoent), 2) is None


@little_endian
def test_enodev_is_an_error_in_words_with_the_kernels_own():
    with pytest.raises(EthtoolError, match=r"ENODEV \(no such network interface\): no device matches name$") as e:
        ethnl.parse_pause(netlink_bytes("pause-get-nosuchnic0-enodev"), FAMILY, 3)
    assert e.value.code == errno.ENODEV


@little_endian
def test_an_mlx5_reply_with_statistics():
    assert ethnl.parse_pause(netlink_bytes(MLX5), FAMILY, 2) == ethnl.PauseStats(tx_frames=918234, rx_frames=3311907)


def _mlx5_with_stats(nest: bytes) -> bytes:
    """The hand-built reply with its ETHTOOL_A_PAUSE_STATS nest (the last 28 bytes) replaced, lengths mended."""
    reply = netlink_bytes(MLX5)[:-28] + nest
    return struct.pack("<I", len(reply)) + reply[4:]


@little_endian
def test_a_counter_the_driver_does_not_keep_is_none_and_a_reply_without_statistics_is_none():
    tx_only = ethnl.attr(ethnl.ETHTOOL_A_PAUSE_STAT_TX_FRAMES, struct.pack("<Q", 5))
    nest = ethnl.attr(ethnl.ETHTOOL_A_PAUSE_STATS | 1 << 15, tx_only)
    assert ethnl.parse_pause(_mlx5_with_stats(nest), FAMILY, 2) == ethnl.PauseStats(tx_frames=5, rx_frames=None)
    # A PAD attribute (where a u64 must be aligned) and one this reader does not know are passed over.
    padded = ethnl.attr(1, b"") + ethnl.attr(9, b"\1\2\3\4") + tx_only
    assert ethnl.parse_pause(_mlx5_with_stats(ethnl.attr(0x8005, padded)), FAMILY, 2).tx_frames == 5
    no_stats = netlink_bytes(MLX5)[:-36]  # neither STATS_SRC nor STATS: stats not asked for, or not kept
    assert ethnl.parse_pause(struct.pack("<I", len(no_stats)) + no_stats[4:], FAMILY, 2) is None


@little_endian
def test_malformed_and_truncated_replies_are_errors_that_say_what():
    whole = netlink_bytes(MLX5)
    for cut in range(len(whole)):
        with pytest.raises(EthtoolError):  # never IndexError or struct.error
            ethnl.parse_pause(whole[:cut], FAMILY, 2)
    with pytest.raises(EthtoolError, match="netlink message says 112 bytes, 100 received"):
        ethnl.parse_pause(whole[:100], FAMILY, 2)
    with pytest.raises(EthtoolError, match="truncated netlink header"):
        ethnl.parse_pause(whole[:10], FAMILY, 2)
    short = ethnl.attr(ethnl.ETHTOOL_A_PAUSE_STAT_RX_FRAMES, b"\1\0\0\0")
    with pytest.raises(EthtoolError, match="ETHTOOL_A_PAUSE_STAT_RX_FRAMES: a u64 of 4 bytes"):
        ethnl.parse_pause(_mlx5_with_stats(ethnl.attr(0x8005, short)), FAMILY, 2)
    overlong = bytearray(whole)
    struct.pack_into("<H", overlong, 84, 200)  # the STATS nest claims more than is left
    with pytest.raises(EthtoolError, match="ETHTOOL_MSG_PAUSE_GET: attribute 5 says 200 bytes, 28 left"):
        ethnl.parse_pause(bytes(overlong), FAMILY, 2)
    other = bytearray(whole)
    other[16] = 23  # ETHTOOL_MSG_PAUSE_NTF
    with pytest.raises(EthtoolError, match="reply names command 23"):
        ethnl.parse_pause(bytes(other), FAMILY, 2)
    with pytest.raises(EthtoolError, match=r"reply of type 0x15 \(96 bytes\), the family is 0x16"):
        ethnl.parse_pause(whole, FAMILY + 1, 2)
    cut_error = struct.pack("<I", 24) + netlink_bytes("pause-get-lo-eopnotsupp")[4:24]  # a length that agrees
    with pytest.raises(EthtoolError, match=r"truncated netlink error \(8 bytes\)"):
        ethnl.parse_pause(cut_error, FAMILY, 2)


@little_endian
def test_the_family_is_asked_once_and_failures_of_the_call_are_errors():
    fake = FakeNetlink(MLX5)
    calls = []

    def call(message: bytes) -> bytes:
        calls.append(struct.unpack_from("<H", message, 4)[0])
        return fake.call(message)

    with ethnl.Netlink(call=call) as netlink:
        assert netlink.pause_stats("enp59s0f0np0").rx_frames == 3311907
        assert netlink.pause_stats("enp134s0f0np0").tx_frames == 918234
    assert calls == [0x10, FAMILY, FAMILY] and fake.asked == ["enp59s0f0np0", "enp134s0f0np0"]

    def broken(message: bytes) -> bytes:
        raise TimeoutError(errno.ETIMEDOUT, "timed out")

    with pytest.raises(EthtoolError, match="netlink: timed out"):
        ethnl.Netlink(call=broken).pause_stats("enp59s0f0np0")


@little_endian
def test_it_asks_the_family_once_a_process_and_again_only_when_a_request_finds_its_id_stale():
    kernel = FakeNetlink(MLX5)
    for _ in range(3):  # three polls, a socket each, as the agent's
        with ethnl.Netlink(call=kernel.call) as netlink:
            assert netlink.pause_stats("enp59s0f0np0").rx_frames == 3311907
    assert kernel.types == [0x10, FAMILY, FAMILY, FAMILY]
    kernel.family = FAMILY + 1  # the family registered anew: numbered again, the old id now names none (ENOENT)
    with ethnl.Netlink(call=kernel.call) as netlink:
        assert netlink.pause_stats("enp59s0f0np0").tx_frames == 918234
        assert netlink.pause_stats("enp134s0f0np0").tx_frames == 918234
    assert kernel.types[4:] == [FAMILY, 0x10, FAMILY + 1, FAMILY + 1]


@little_endian
def test_it_raises_a_refusal_of_the_request_itself_after_finding_the_family_id_unchanged():
    einval = bytearray(netlink_bytes("pause-get-lo-eopnotsupp"))
    struct.pack_into("<i", einval, 16, -errno.EINVAL)
    kernel = FakeNetlink(bytes(einval))
    with pytest.raises(EthtoolError, match="EINVAL") as e:
        ethnl.Netlink(call=kernel.call).pause_stats("enp59s0f0np0")
    assert e.value.code == errno.EINVAL
    assert kernel.types == [0x10, FAMILY, 0x10]  # asked again, the same id: the request is not sent twice


@little_endian
def test_it_keeps_no_family_from_a_request_that_failed():
    def broken(message: bytes) -> bytes:
        raise TimeoutError(errno.ETIMEDOUT, "timed out")

    with pytest.raises(EthtoolError, match="netlink: timed out"):
        ethnl.Netlink(call=broken).family()
    kernel = FakeNetlink(MLX5)
    assert ethnl.Netlink(call=kernel.call).family() == FAMILY and kernel.types == [0x10]


def test_this_machines_kernel():
    """Through a real NETLINK_GENERIC socket: the ethtool family resolves, loopback has no pause (None), and a
    name no interface has is ENODEV."""
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, ethnl.NETLINK_GENERIC).close()
    except OSError as e:
        pytest.skip(f"no generic netlink here: {e}")
    with ethnl.Netlink() as netlink:
        family = netlink.family()
        if family is None:
            pytest.skip("this kernel has no ethtool netlink family (before 5.6)")
        assert 0x10 < family < 0xFFFF
        assert netlink.pause_stats("lo") is None
        with pytest.raises(EthtoolError, match="ENODEV") as e:
            netlink.pause_stats("nosuchnic0")
        assert e.value.code == errno.ENODEV
