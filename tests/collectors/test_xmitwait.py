"""Covers collectors/link.py, collectors/xmitwait.py.

PortXmitWait as lost bandwidth: bytes per count by the switch's device id, and the share of link time lost,
against hand computations from NVIDIA's ibdiagnet manual (lost bytes = counter × (tick+1), × lanes where the
ASIC counts per lane)."""

from __future__ import annotations

import pytest

from collectors.link import Rate, make_rate
from collectors.xmitwait import (
    XMIT_WAIT_UNITS,
    congestion_ratio,
    device_id,
    lost_share,
    switch_board_id,
    xmit_wait_unit,
)

QUANTUM_2, SWITCH_IB_2 = 0xD2F2, 0xCF08


@pytest.mark.parametrize(
    ("device", "speed", "lanes", "counts", "seconds", "share"),
    [
        # Quantum-2, 4X NDR: 400 Gb/s = 50e9 B/s; 625e6 counts x 8 B = 5e9 B lost in 10 s: 1 % of the link's time.
        (QUANTUM_2, "NDR", 4, 625_000_000, 10.0, 0.01),
        # Quantum-2, 4X HDR: 25e9 B/s; the same counts are twice the share of a link half as fast.
        (QUANTUM_2, "HDR", 4, 625_000_000, 10.0, 0.02),
        # Switch-IB 2, 4X EDR: 12.5e9 B/s; 390,625,000 counts x 32 B x 4 lanes = 5e10 B in 10 s: 40 %.
        (SWITCH_IB_2, "EDR", 4, 390_625_000, 10.0, 0.4),
        # Switch-IB 2, 1X EDR: 3.125e9 B/s; per lane, so one lane's counts are worth 32 B each: 40 % again.
        (SWITCH_IB_2, "EDR", 1, 390_625_000, 10.0, 0.4),
    ],
)
def test_it_turns_counts_into_the_share_of_link_time_lost_as_the_manual_computes_it(
    device, speed, lanes, counts, seconds, share
):
    unit = xmit_wait_unit(device)
    assert not unit.assumed
    assert lost_share(counts, unit, make_rate(speed, lanes), seconds) == pytest.approx(share)


def test_a_quantum_counts_per_port_and_a_switch_ib_per_lane():
    assert xmit_wait_unit(QUANTUM_2).lost_bytes(1000, lanes=4) == 8_000
    assert xmit_wait_unit(SWITCH_IB_2).lost_bytes(1000, lanes=4) == 128_000
    assert xmit_wait_unit(QUANTUM_2).describe() == (
        "8 bytes of port time per count (Quantum-2; NVIDIA ibdiagnet manual, Congestion Assessment on InfiniBand "
        "Links: Quantum-2 counts every 8 bytes regardless of the port's width (PortSamplesControl Tick 7))"
    )


@pytest.mark.parametrize("device", [0x1234, 0, None])
def test_a_device_not_in_the_table_gets_the_stated_default_and_says_it_is_assumed(device):
    unit = xmit_wait_unit(device)
    assert unit.assumed and (unit.bytes_per_count, unit.per_lane) == (8, False)
    assert unit.describe().startswith("8 bytes of port time per count (assumed: ")
    assert ("0x1234" in unit.describe()) is (device == 0x1234)


def test_every_row_names_its_source():
    assert XMIT_WAIT_UNITS and all(u.source.startswith("NVIDIA ibdiagnet manual") for u in XMIT_WAIT_UNITS.values())


@pytest.mark.parametrize(
    ("rate", "seconds"),
    [(make_rate("NDR", 4), 0.0), (Rate(0.0, None, None), 10.0)],
    ids=["no time passed", "no link"],
)
def test_no_share_is_made_without_a_link_or_without_time(rate, seconds):
    assert lost_share(100, xmit_wait_unit(QUANTUM_2), rate, seconds) is None


def test_a_share_above_the_whole_link_is_kept_so_a_wrong_unit_shows():
    # 10 s of 4X NDR is 5e11 B of link time; 1e11 counts x 8 B is 8e11 B: the unit cannot be right.
    assert lost_share(100_000_000_000, xmit_wait_unit(0x1234), make_rate("NDR", 4), 10.0) == pytest.approx(1.6)


@pytest.mark.parametrize(
    ("hca_type", "board_id", "device"),
    [
        (None, "vendor 0x0002c9 device 0xd2f2", QUANTUM_2),  # a swept switch: its NodeInfo, as switchports stores it
        (None, switch_board_id(0x0002C9, SWITCH_IB_2), SWITCH_IB_2),
        ("MT4123", "MT_0000000223", 0x101B),  # a host's ConnectX-6: mlx5 prints the PCI device id in decimal
        ("MT4123", None, 0x101B),
        (None, "vendor 0x0002c9", None),  # a switch whose NodeInfo gave no device id
        ("bnxt_re", "BCM957508", None),  # another vendor's HCA says nothing
        ("MT99999", None, None),  # past 16 bits: no device id
    ],
)
def test_it_reads_the_device_id_from_what_the_inventory_stores(hca_type, board_id, device):
    assert device_id(hca_type, board_id) == device


def test_a_hosts_hca_is_counted_at_the_default_and_says_assumed():
    # NVIDIA publishes no bytes per count for its adapters: a ConnectX-6 on 4X HDR (25e9 B/s) is counted as 8 bytes.
    assert congestion_ratio(3_125_000_000, device_id("MT4123", None), make_rate("HDR", 4), 10.0) == pytest.approx(0.1)
    assert xmit_wait_unit(0x101B).short() == "8 bytes per count, assumed"


def test_no_ratio_is_made_from_an_unknown_count_or_link():
    assert congestion_ratio(None, QUANTUM_2, make_rate("NDR", 4), 10.0) is None
    assert congestion_ratio(100, QUANTUM_2, None, 10.0) is None
    assert congestion_ratio(100, QUANTUM_2, make_rate("NDR", 4), None) is None
