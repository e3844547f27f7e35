"""Link speeds in the fabric's own words: which PortInfo fields say a port's speed, and FDR10.

A port states its speed in up to three PortInfo fields, and its capability masks say which
apply (docs/infiniband.md §2c): LinkSpeed (SDR to QDR), LinkSpeedExt (FDR to NDR, when
CapabilityMask.IsExtendedSpeedsSupported) and LinkSpeedExt2 (XDR, when CapabilityMask2.
IsExtendedSpeeds2Supported too). FDR10 is in none of them: a Mellanox port at FDR10 says QDR
in PortInfo and FDR10 in the vendor's ExtendedPortInfo attribute. Layouts are rdma-core's
libibmad (fields.c) and libibnetdisc's reading of them; the speeds' names and rates are
collectors/link.py's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# PortInfo.CapabilityMask bit 14: the port reports FDR and faster in the LinkSpeedExt fields; bit 15: it has
# a CapabilityMask2, whose bit 11 (IsExtendedSpeeds2Supported) says it reports XDR in LinkSpeedExt2.
CAP_EXTENDED_SPEEDS = 1 << 14
CAP_MASK2_SUPPORTED = 1 << 15
CAP2_EXTENDED_SPEEDS_2 = 1 << 11

# LinkSpeedActive/Supported/Enabled bits, their LinkSpeedExt and LinkSpeedExt2 twins (IBA 14.2.5.6, table 155;
# the Ext2 values as rdma-core's libibmad dumps them: Active2 1 and bit 0 of Supported2/Enabled2 are 212.5 Gbps).
BASE_SPEED_BITS = {1: "SDR", 2: "DDR", 4: "QDR"}
EXT_SPEED_BITS = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR"}
EXT2_SPEED_BITS = {1: "XDR"}
EXT_SPEEDS_DISABLED = 30  # LinkSpeedExtEnabled 30: extended speeds switched off, not a mask
FDR10_BIT = 0x01  # in ExtendedPortInfo's LinkSpeedSupported/Enabled/Active


@dataclass(frozen=True, slots=True)
class SpeedFields:
    """Which of a PortInfo's speed fields hold the truth, from the CapabilityMask and CapabilityMask2 that
    speak for the port: its own, or on a switch's external port its port 0's (those fields are reserved
    there; iblinkinfo and libibnetdisc read port 0's too)."""

    extended: bool  # LinkSpeedExt: FDR to NDR
    extended2: bool  # LinkSpeedExt2: XDR


def speed_fields(data: bytes) -> SpeedFields:
    cap_mask, cap_mask2 = struct.unpack_from(">I", data, 20)[0], struct.unpack_from(">H", data, 60)[0]
    extended = bool(cap_mask & CAP_EXTENDED_SPEEDS)
    # libibnetdisc reads LinkSpeedExt2 only where LinkSpeedExt applies and CapabilityMask2 exists and says so.
    extended2 = extended and bool(cap_mask & CAP_MASK2_SUPPORTED) and bool(cap_mask2 & CAP2_EXTENDED_SPEEDS_2)
    return SpeedFields(extended, extended2)


@dataclass(frozen=True, slots=True)
class LinkSpeeds:
    active: str | None  # SDR ... XDR; None: a code this collector does not know, never another speed
    enabled: frozenset[str]
    supported: frozenset[str]


def link_speeds(data: bytes, fields: SpeedFields) -> LinkSpeeds:
    """The port's speeds from the fields that apply: XDR from LinkSpeedExt2, FDR to NDR from LinkSpeedExt,
    SDR to QDR from LinkSpeed; the faster field that is set wins, as in libibnetdisc's aggregate."""
    base_supported, base_active, base_enabled = data[32] >> 4, data[35] >> 4, data[35] & 0xF
    ext_active = ext_supported = ext_enabled = ext2_active = ext2_supported = ext2_enabled = 0
    if fields.extended:
        ext_active, ext_supported, ext_enabled = data[62] >> 4, data[62] & 0xF, data[63] & 0x1F
        if ext_enabled == EXT_SPEEDS_DISABLED:
            ext_enabled = 0
    if fields.extended2:
        # Byte 56 (bits 448-455): reserved bit, LinkSpeedExtActive2 (2 bits), Supported2 (2), Enabled2 (3).
        ext2_active, ext2_supported, ext2_enabled = (data[56] >> 5) & 3, (data[56] >> 3) & 3, data[56] & 7
    if ext2_active:
        active = EXT2_SPEED_BITS.get(ext2_active)
    elif ext_active:
        active = EXT_SPEED_BITS.get(ext_active)
    else:
        active = BASE_SPEED_BITS.get(base_active)
    return LinkSpeeds(
        active,
        _speeds(base_enabled, ext_enabled, ext2_enabled),
        _speeds(base_supported, ext_supported, ext2_supported),
    )


def _speeds(base: int, ext: int, ext2: int) -> frozenset[str]:
    names = {name for bit, name in BASE_SPEED_BITS.items() if base & bit}
    names.update(name for bit, name in EXT_SPEED_BITS.items() if ext & bit)
    names.update(name for bit, name in EXT2_SPEED_BITS.items() if ext2 & bit)
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class Fdr10:
    """FDR10 from Mellanox's ExtendedPortInfo: a QDR-signalled PortInfo whose link really runs FDR10."""

    supported: bool
    enabled: bool
    active: bool


def decode_mlnx_ext_port_info(data: bytes) -> Fdr10:
    """ExtendedPortInfo (0xFF90): LinkSpeedSupported, Enabled and Active in bytes 7, 11 and 15, FDR10 bit 0."""
    if len(data) < 16:
        raise ValueError(f"an ExtendedPortInfo of {len(data)} bytes")
    return Fdr10(*(bool(data[i] & FDR10_BIT) for i in (7, 11, 15)))


def has_mlnx_ext_port_info(vendor_id: int | None, device_id: int | None) -> bool:
    """Whether a node answers ExtendedPortInfo: the devices libibnetdisc asks (is_mlnx_ext_port_info_supported),
    SwitchX to Quantum and ConnectX-3 to ConnectX-7/BlueField, and Bull's OEM ones. Others are not asked."""
    if device_id is None:
        return False
    if device_id in _MLNX_EPI_DEVICES or 0x1003 <= device_id <= 0x101B or 0xC738 <= device_id <= 0xC73B:
        return True
    return vendor_id == _BULL and (device_id in _BULL_EPI_DEVICES or 0x1BD0 <= device_id <= 0x1BD5)


_MLNX_EPI_DEVICES = frozenset({0xC839, 0xCB20, 0xCF08, 0xCF09, 0xD2F0, 0xA2D2})
_BULL = 0x119F
_BULL_EPI_DEVICES = frozenset(
    {0x1B02, 0x1B50, 0x1BA0, 0x1BF0, 0x1B33, 0x1B73, 0x1B40, 0x1B41, 0x1B60, 0x1B61, 0x1B83, 0x1B93, 0x1B94}
    | {0x1BB4, 0x1BB5, 0x1BC4, 0x1BC5, 0x1BC6}
)
