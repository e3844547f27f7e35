"""Covers collectors/mads/mad.py, collectors/mads/portspeed.py.

Which PortInfo fields say a port's speed, and FDR10, against rdma-core's layouts.

The local libibmad (rdma-core 44) lays out every field here but LinkSpeedExt2, which came with XDR in
rdma-core 50: those three fields are placed by the bit offsets rdma-core's libibmad/fields.c gives them
(BITSOFFS 449, 451 and 453), counted as the IBA counts them, from the attribute's first bit.
"""

from __future__ import annotations

import pytest

from collectors.mads import mad
from collectors.mads.portspeed import (
    SpeedFields,
    decode_mlnx_ext_port_info,
    has_mlnx_ext_port_info,
    link_speeds,
    speed_fields,
)
from tests.fabric.libibmad import Buffer

EXT_SPEEDS, HAS_CAP_MASK2, EXT_SPEEDS_2 = 1 << 14, 1 << 15, 1 << 11
EXT2_FIELDS = {"active": (449, 2), "supported": (451, 2), "enabled": (453, 3)}  # rdma-core libibmad/fields.c


def port_info(ext2: dict[str, int] | None = None, **fields) -> bytes:
    buf = Buffer(64)
    for name, value in fields.items():
        # CapabilityMask2 is ClassPortInfo's field name too: PortInfo's is the one after the GUIDInfo record.
        buf.set(name, value, after="Guid7" if name == "CapabilityMask2" else None)
    data = bytearray(buf.data[:64])
    for name, value in (ext2 or {}).items():
        offset, width = EXT2_FIELDS[name]
        data[offset // 8] |= value << (8 - offset % 8 - width)
    return bytes(data)


def xdr_port(cap_mask=EXT_SPEEDS | HAS_CAP_MASK2, cap_mask2=EXT_SPEEDS_2, active2=1) -> bytes:
    return port_info(
        {"active": active2, "supported": 1, "enabled": 1},
        CapMask=cap_mask,
        CapabilityMask2=cap_mask2,
        LinkSpeedSupported=7,
        LinkSpeedEnabled=7,
        LinkSpeedExtActive=0 if active2 else 8,
        LinkSpeedExtSupported=0xC,
        LinkSpeedExtEnabled=0xC,
    )


def test_it_reads_xdr_from_linkspeedext2_when_capabilitymask2_says_the_port_has_it():
    info = mad.decode_port_info(xdr_port())
    assert info.speed_active == "XDR"
    assert info.speed_supported == info.speed_enabled == {"SDR", "DDR", "QDR", "HDR", "NDR", "XDR"}


def test_an_xdr_capable_port_trained_at_ndr_reads_ndr_and_still_supports_xdr():
    info = mad.decode_port_info(xdr_port(active2=0))
    assert info.speed_active == "NDR" and "XDR" in info.speed_supported


@pytest.mark.parametrize(
    ("cap_mask", "cap_mask2"),
    [(EXT_SPEEDS | HAS_CAP_MASK2, 0), (EXT_SPEEDS, EXT_SPEEDS_2), (HAS_CAP_MASK2, EXT_SPEEDS_2)],
    ids=["no IsExtendedSpeeds2Supported", "no CapabilityMask2", "no extended speeds"],
)
def test_it_ignores_linkspeedext2_the_port_does_not_claim(cap_mask, cap_mask2):
    info = mad.decode_port_info(xdr_port(cap_mask, cap_mask2))
    assert info.speed_active != "XDR" and "XDR" not in info.speed_supported


def test_a_switch_port_is_read_through_the_capability_masks_it_is_given():
    external = xdr_port(cap_mask=0, cap_mask2=0)  # reserved on a switch's external ports
    port0 = speed_fields(xdr_port())
    assert port0 == SpeedFields(extended=True, extended2=True)
    assert mad.decode_port_info(external).speed_active is None
    assert mad.decode_port_info(external, port0).speed_active == "XDR"


def test_extended_speeds_switched_off_enable_none_of_them():
    data = port_info(CapMask=EXT_SPEEDS, LinkSpeedEnabled=7, LinkSpeedExtSupported=0xF, LinkSpeedExtEnabled=30)
    assert link_speeds(data, speed_fields(data)).enabled == {"SDR", "DDR", "QDR"}


def test_it_reads_fdr10_from_extendedportinfo_as_libibmad_lays_it_out():
    buf = Buffer(64)
    buf.set("StateChangeEnable", 1)
    for field, value in (("LinkSpeedSupported", 1), ("LinkSpeedEnabled", 1), ("LinkSpeedActive", 0)):
        buf.set(field, value, after="StateChangeEnable")
    fdr10 = decode_mlnx_ext_port_info(buf.data[:64])
    assert (fdr10.supported, fdr10.enabled, fdr10.active) == (True, True, False)
    buf.set("LinkSpeedActive", 1, after="StateChangeEnable")
    assert decode_mlnx_ext_port_info(buf.data[:64]).active


@pytest.mark.parametrize(
    ("vendor", "device", "asked"),
    [
        (0x02C9, 0x1003, True),  # ConnectX-3
        (0x02C9, 0xC738, True),  # SwitchX
        (0x02C9, 0xD2F0, True),  # Quantum
        (0x119F, 0x1B33, True),  # Bull's ConnectX-3
        (0x02C9, 0x1023, False),  # ConnectX-8: XDR era, no FDR10
        (0x02C9, 0x673C, False),  # ConnectX-2
        (0x0000, 0x0000, False),  # ibsim's nodes
        (0x02C9, None, False),
    ],
)
def test_only_the_devices_libibnetdisc_asks_are_asked_for_extendedportinfo(vendor, device, asked):
    assert has_mlnx_ext_port_info(vendor, device) is asked
