"""Covers collectors/ethtool.py: the ethtool statistics reader on a recorded mlx5 `ethtool -S`, the SIOCETHTOOL
requests' bytes as the kernel fills them in, its refusals, and this machine's kernel."""

from __future__ import annotations

import errno
import os
import struct
import sys
from pathlib import Path

import pytest

from collectors import ethtool, roce
from tests.collectors.ethtool_support import GSSET_INFO, GSTATS, GSTRINGS, FakeKernel

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "ethtool" / "mlx5-connectx6dx-roce.txt"
WANTED = frozenset(roce.ETHTOOL_NAMES)
little_endian = pytest.mark.skipif(sys.byteorder != "little", reason="the replies below are written little-endian")


def test_a_recorded_mlx5_ethtool_s_gives_the_lossless_statistics():
    stats = ethtool.parse_recorded(RECORDING.read_text(), WANTED)
    assert set(stats) == WANTED  # a ConnectX-6 Dx prints every one of them
    assert stats["rx_prio3_pause"] == 3311907
    assert stats["rx_prio3_pause_duration"] == 165595350
    assert stats["tx_prio3_pause"] == 918234
    assert stats["tx_prio3_pause_duration"] == 45911700
    assert stats["tx_pause_storm_warning_events"] == 2
    assert stats["tx_pause_storm_error_events"] == 0
    assert stats["rx_discards_phy"] == 1842
    assert stats["rx_prio0_pause"] == 0
    assert "rx_prio3_pause_transition" not in stats and "rx0_packets" not in stats  # only what was asked for


def test_a_recording_that_is_not_ethtool_s_or_holds_a_bad_value_is_refused():
    with pytest.raises(ethtool.EthtoolError, match="not the output of `ethtool -S`"):
        ethtool.parse_recorded("rx_prio3_pause: 1\n", WANTED)
    with pytest.raises(ethtool.EthtoolError, match="rx_prio3_pause: not a 64-bit count: '-1'"):
        ethtool.parse_recorded("NIC statistics:\n     rx_prio3_pause: -1\n", WANTED)
    with pytest.raises(ethtool.EthtoolError, match="not a 64-bit count"):
        ethtool.parse_recorded(f"NIC statistics:\n     rx_discards_phy: {1 << 64}\n", WANTED)
    # A line of another statistic that does not parse is not ours to judge.
    assert ethtool.parse_recorded("NIC statistics:\n     ch0_arm: n/a\n     rx_discards_phy: 7\n", WANTED) == {
        "rx_discards_phy": 7
    }


@little_endian
def test_the_three_requests_and_the_kernels_replies():
    stats = {"rx_packets": 10, "rx_prio3_pause": 3311907, "rx_prio3_pause_duration": 165595350, "tx_prio3_pause": 5}
    kernel = FakeKernel(stats)
    assert ethtool.read_stats("enp59s0f0np0", WANTED, kernel.call) == {
        "rx_prio3_pause": 3311907,
        "rx_prio3_pause_duration": 165595350,
        "tx_prio3_pause": 5,
    }
    # What was sent: GSSET_INFO for the ETH_SS_STATS set (bit 1), then 4 names of 32 bytes, then 4 values.
    (_, c1, r1), (_, c2, r2), (_, c3, r3) = kernel.calls
    assert (c1, c2, c3) == (GSSET_INFO, GSTRINGS, GSTATS)
    assert r1 == bytes.fromhex("3700000000000000020000000000000000000000")
    assert r2 == bytes.fromhex("1b0000000100000004000000") + bytes(4 * 32)
    assert r3 == bytes.fromhex("1d00000004000000") + bytes(4 * 8)


@little_endian
def test_replies_written_out_byte_by_byte_parse():
    info = bytes.fromhex("3700000000000000020000000000000003000000")
    assert ethtool.parse_sset_info(info) == 3
    strings = bytes.fromhex("1b0000000100000003000000") + b"".join(
        n.ljust(32, b"\0") for n in (b"tx_pause_storm_warning_events", b"tx_pause_storm_error_events", b"x")
    )
    assert ethtool.parse_strings(strings, 3) == ["tx_pause_storm_warning_events", "tx_pause_storm_error_events", "x"]
    values = bytes.fromhex("1d0000000300000002000000000000000000000000000000ffffffffffffffff")
    assert ethtool.parse_stats(values, 3) == (2, 0, (1 << 64) - 1)


@little_endian
def test_what_the_kernel_can_refuse_is_said_in_words():
    no_stats = FakeKernel({"rx_packets": 1}, sets=0)  # a driver without statistics (lo)
    with pytest.raises(ethtool.EthtoolError, match="reports no statistics"):
        ethtool.read_stats("lo", WANTED, no_stats.call)
    growing = FakeKernel({"rx_prio3_pause": 1}, grow_after_strings=True)
    with pytest.raises(ethtool.EthtoolError, match="2 values where 1 names were read"):
        ethtool.read_stats("enp59s0f0np0", WANTED, growing.call)

    def gone(ifname, request):
        raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))

    with pytest.raises(ethtool.EthtoolError, match=r"ENODEV \(no such network interface\)"):
        ethtool.read_stats("enp59s0f0np0", WANTED, gone)
    too_many = bytes.fromhex("37000000000000000200000000000000") + struct.pack("<I", ethtool.MAX_STATS + 1)
    with pytest.raises(ethtool.EthtoolError, match="more than the 16384 read at most"):
        ethtool.parse_sset_info(too_many)
    with pytest.raises(ethtool.EthtoolError, match="reply of 8 bytes"):
        ethtool.parse_sset_info(bytes(8))


def test_this_machines_kernel_answers_the_same_requests():
    """Through a real SIOCETHTOOL: an interface with driver statistics (a virtio or veth NIC here) gives
    counts; loopback has none; a name no interface has is ENODEV."""
    with ethtool.Kernel() as kernel:
        with pytest.raises(ethtool.EthtoolError, match="ENODEV"):
            ethtool.read_stats("nosuchnic0", WANTED, kernel.call)
        with pytest.raises(ethtool.EthtoolError, match="not a network interface name"):
            kernel.call("a/b", bytearray(8))
        if os.path.isdir("/sys/class/net/lo"):
            with pytest.raises(ethtool.EthtoolError, match="reports no statistics"):
                ethtool.read_stats("lo", WANTED, kernel.call)

        class Every:
            def __contains__(self, name: object) -> bool:
                return True

        read = {}
        for ifname in sorted(os.listdir("/sys/class/net")):
            try:
                read = ethtool.read_stats(ifname, Every(), kernel.call)
            except ethtool.EthtoolError:
                continue
            if read:
                break
        if not read:
            pytest.skip("no network interface here has driver statistics")
        assert all(isinstance(k, str) and k and type(v) is int and v >= 0 for k, v in read.items())
