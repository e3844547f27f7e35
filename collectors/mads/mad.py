"""Management datagrams (MADs) the fabric collector sends and reads: encoding and decoding. Pure functions.

A MAD is 256 bytes: a 24-byte common header, class-specific fields, then the attribute's
data. Layouts are the InfiniBand Architecture Specification's (volume 1, chapters 13-16),
checked field by field against rdma-core's libibmad (tests/fabric/test_mad.py encodes with
libibmad's mad_set_field and decodes here):

- subnet management (SMP), directed route (class 0x81): what ibnetdiscover and iblinkinfo
  send, hop by hop from this host's port, so it needs no LIDs and no subnet manager;
- performance management (PMA, class 0x04), routed by LID to the switch: what perfquery sends.

Only what the collector reads is decoded: NodeInfo, NodeDescription, PortInfo, SwitchInfo,
LinearForwardingTable, PortCounters, PortCountersExtended and Mellanox's ExtendedPortInfo (FDR10).
Every multi-byte field is big-endian (network order). Which of PortInfo's three speed fields apply
(LinkSpeed, LinkSpeedExt for FDR to NDR, LinkSpeedExt2 for XDR) and where FDR10 comes from are in
docs/infiniband.md §2c.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from collectors.facts import ERROR_COUNTERS, XMIT_WAIT
from collectors.link import WIDTH_BY_VERBS_BIT

from .portspeed import SpeedFields, link_speeds, speed_fields

MAD_SIZE = 256
DATA_OFFSET = 64  # SMP data and GS (PMA) data both start here
SMP_DATA_SIZE = 64
MAX_HOPS = 63  # a directed route's initial path holds 64 bytes, entry 0 unused

BASE_VERSION = 1
CLASS_SUBN_DIRECTED_ROUTE = 0x81
CLASS_PERFORMANCE = 0x04
METHOD_GET = 0x01
METHOD_GET_RESPONSE = 0x81

ATTR_NODE_DESCRIPTION = 0x0010
ATTR_NODE_INFO = 0x0011
ATTR_PORT_INFO = 0x0015
ATTR_SWITCH_INFO = 0x0012  # in the SMP class; PortCounters shares the number in the PMA class
ATTR_LINEAR_FORWARDING_TABLE = 0x0019
ATTR_PORT_COUNTERS = 0x0012
ATTR_PORT_COUNTERS_EXT = 0x001D
ATTR_MLNX_EXT_PORT_INFO = 0xFF90  # Mellanox's vendor SMP attribute (libibmad IB_ATTR_MLNX_EXT_PORT_INFO)

PERMISSIVE_LID = 0xFFFF
GSI_QP = 1
GSI_QKEY = 0x80010000

NODE_TYPE_CA, NODE_TYPE_SWITCH, NODE_TYPE_ROUTER = 1, 2, 3

# A LinearForwardingTable block: the out ports of 64 consecutive LIDs, the block number its modifier.
LFT_BLOCK = 64
NO_ROUTE = 255  # an LFT entry that forwards nowhere (IBA 14.2.5.10)
MAX_UNICAST_LID = 0xBFFF

# The status a directed-route SMP or a GS reply carries: bit 0 busy, bit 1 redirect, bits 2-4 a code.
STATUS_CODES = {
    1: "bad version",
    2: "method not supported",
    3: "method/attribute combination not supported",
    7: "invalid attribute or modifier",
}

_HEADER = struct.Struct(
    ">BBBBHBBQHHI"
)  # base, class, class version, method, status, hop ptr, hop cnt, TID, attr, rsvd, mod


class MadError(ValueError):
    """A reply that is not the MAD it should be: too short, another class, an error status."""


# -- requests ---------------------------------------------------------------------------------------


def directed_get(tid: int, attribute: int, modifier: int, path: tuple[int, ...]) -> bytes:
    """A SubnGet() of `attribute` along a directed route: `path` is the output port at each hop.

    An empty path is this host's own port (hop count 0).
    """
    if len(path) > MAX_HOPS:
        raise ValueError(f"a directed route has at most {MAX_HOPS} hops, not {len(path)}")
    mad = bytearray(MAD_SIZE)
    _HEADER.pack_into(
        mad, 0, BASE_VERSION, CLASS_SUBN_DIRECTED_ROUTE, 1, METHOD_GET, 0, 0, len(path), tid, attribute, 0, modifier
    )
    struct.pack_into(">HH", mad, 32, PERMISSIVE_LID, PERMISSIVE_LID)  # DrSLID, DrDLID: the route is all directed
    mad[129 : 129 + len(path)] = bytes(path)  # InitialPath[1..hops]; [0] is unused
    return bytes(mad)


def pma_get(tid: int, attribute: int, port: int) -> bytes:
    """A PerfMgtGet() of `attribute` (PortCounters or PortCountersExtended) for port `port` of the target."""
    mad = bytearray(MAD_SIZE)
    _HEADER.pack_into(mad, 0, BASE_VERSION, CLASS_PERFORMANCE, 1, METHOD_GET, 0, 0, 0, tid, attribute, 0, 0)
    mad[DATA_OFFSET + 1] = port  # PortSelect; CounterSelect 0: read, no reset
    return bytes(mad)


# -- replies ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    tid: int  # the lower 32 bits: the upper half belongs to the kernel's MAD agent (or the simulator)
    attribute: int
    data: bytes  # the attribute's data, from byte 64


def read_reply(mad: bytes) -> Reply:
    """The header of a GetResp(); MadError for anything else (short, a request, an error status)."""
    if len(mad) < MAD_SIZE:
        raise MadError(f"a reply of {len(mad)} bytes, not {MAD_SIZE}")
    base, mgmt_class, _version, method, status, _ptr, _cnt, tid, attribute, _rsvd, _mod = _HEADER.unpack_from(mad)
    if base != BASE_VERSION or mgmt_class not in (CLASS_SUBN_DIRECTED_ROUTE, CLASS_PERFORMANCE):
        raise MadError(f"base version {base}, class {mgmt_class:#04x}: not a reply to this collector")
    if method != METHOD_GET_RESPONSE:
        raise MadError(f"method {method:#04x}, not GetResp")
    if mgmt_class == CLASS_SUBN_DIRECTED_ROUTE:
        status &= 0x7FFF  # the top bit is the route's direction
    if status:
        raise MadError(f"status {status:#06x} ({status_reason(status)}) for attribute {attribute:#06x}")
    return Reply(tid & 0xFFFFFFFF, attribute, mad[DATA_OFFSET:])


def status_reason(status: int) -> str:
    if status & 1:
        return "busy"
    if status & 2:
        return "redirect required"
    return STATUS_CODES.get((status >> 2) & 7, "error")


def format_guid(guid: int) -> str:
    """`0x0002c90300a1b2c0`, as ibnetdiscover and iblinkinfo print a GUID."""
    return f"0x{guid:016x}"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_type: int
    num_ports: int
    system_guid: int
    node_guid: int
    port_guid: int
    device_id: int
    revision: int
    local_port: int  # the port the query came in through
    vendor_id: int


_NODE_INFO = struct.Struct(">xxBBQQQxxHIB3s")


def decode_node_info(data: bytes) -> NodeInfo:
    node_type, ports, system_guid, node_guid, port_guid, device_id, revision, local, vendor = _NODE_INFO.unpack_from(
        data
    )
    return NodeInfo(
        node_type, ports, system_guid, node_guid, port_guid, device_id, revision, local, int.from_bytes(vendor)
    )


@dataclass(frozen=True, slots=True)
class SwitchInfo:
    linear_fdb_cap: int  # LIDs the linear table can hold
    linear_fdb_top: int  # the highest LID with a valid entry: the table's used length less one


def decode_switch_info(data: bytes) -> SwitchInfo:
    cap, _random, _multicast, top = struct.unpack_from(">HHHH", data)
    return SwitchInfo(cap, top)


def decode_lft_block(data: bytes) -> bytes:
    """A LinearForwardingTable block: the out port of each of its 64 LIDs (255: none)."""
    block = bytes(data[:LFT_BLOCK])
    if len(block) != LFT_BLOCK:
        raise MadError(f"a forwarding table block of {len(block)} bytes, not {LFT_BLOCK}")
    return block


def decode_node_description(data: bytes) -> str:
    """NodeDescription: up to 64 bytes of text, NUL-padded. Set by whoever runs the node: untrusted.

    Undecodable bytes become U+FFFD and control characters are dropped, so it prints and stores safely.
    """
    raw = bytes(data[:SMP_DATA_SIZE]).split(b"\0", 1)[0]
    text = raw.decode("utf-8", errors="replace")
    return "".join(ch for ch in text if ch.isprintable()).strip()


@dataclass(frozen=True, slots=True)
class PortInfo:
    lid: int
    sm_lid: int
    cap_mask: int
    local_port: int
    state: int  # 1 Down, 2 Init, 3 Armed, 4 Active (the sysfs `state` ids)
    phys_state: int  # 1 Sleep, 2 Polling, 3 Disabled, 4 training, 5 LinkUp, 6 LinkErrorRecovery
    lmc: int
    width_active: int | None  # lanes
    width_enabled: frozenset[int]  # lane counts
    width_supported: frozenset[int]
    speed_active: str | None  # SDR ... XDR (FDR10 is not in PortInfo: see Fdr10)
    speed_enabled: frozenset[str]
    speed_supported: frozenset[str]
    mtu_cap: int
    neighbor_mtu: int


_PORT_INFO = struct.Struct(">16xHHI4xBBBBBBBB")


def decode_port_info(data: bytes, fields: SpeedFields | None = None) -> PortInfo:
    """PortInfo, its speeds read through `fields` (by default the port's own capability masks)."""
    (lid, sm_lid, cap_mask, local, w_enabled, w_supported, w_active, b32, b33, b34, _b35) = _PORT_INFO.unpack_from(data)
    speeds = link_speeds(data, speed_fields(data) if fields is None else fields)
    return PortInfo(
        lid=lid,
        sm_lid=sm_lid,
        cap_mask=cap_mask,
        local_port=local,
        state=b32 & 0xF,
        phys_state=b33 >> 4,
        lmc=b34 & 0x7,
        width_active=WIDTH_BY_VERBS_BIT.get(w_active),
        width_enabled=_widths(w_enabled),
        width_supported=_widths(w_supported),
        speed_active=speeds.active,
        speed_enabled=speeds.enabled,
        speed_supported=speeds.supported,
        mtu_cap=data[41] & 0xF,
        neighbor_mtu=data[36] >> 4,
    )


def _widths(mask: int) -> frozenset[int]:
    return frozenset(lanes for bit, lanes in WIDTH_BY_VERBS_BIT.items() if mask & bit)


# PortCounters (attribute 0x0012) in its order, by the sysfs counters/ file names the host reader uses.
PORT_COUNTERS = (*ERROR_COUNTERS, "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", XMIT_WAIT)
_PORT_COUNTERS = struct.Struct(">4xHBBHHHHBBxB2xHIIIII")

# PortCountersExtended (attribute 0x001D): 64 bits each, named as the legacy counters_ext/ files
# (data and packets) and counters/ (unicast, multicast), so ingest's column rules apply unchanged.
PORT_COUNTERS_EXT = (
    "port_xmit_data_64",
    "port_rcv_data_64",
    "port_xmit_packets_64",
    "port_rcv_packets_64",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
)
_PORT_COUNTERS_EXT = struct.Struct(">8xQQQQQQQQ")
_DATA = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_data_64", "port_rcv_data_64"})


def decode_port_counters(data: bytes) -> dict[str, int]:
    """PortCounters in base units: data counters in bytes (the PMA counts 4-octet words)."""
    (sym, ler, downed, rcv, remote, relay, discards, xcons, rcons, b19, vl15, xd, rd, xp, rp, wait) = (
        _PORT_COUNTERS.unpack_from(data)
    )
    values = (
        sym,
        ler,
        downed,
        rcv,
        remote,
        relay,
        discards,
        xcons,
        rcons,
        b19 >> 4,
        b19 & 0xF,
        vl15,
        xd * 4,
        rd * 4,
        xp,
        rp,
        wait,
    )
    return dict(zip(PORT_COUNTERS, values, strict=True))


def decode_port_counters_ext(data: bytes) -> dict[str, int]:
    """PortCountersExtended in base units (data in bytes)."""
    values = _PORT_COUNTERS_EXT.unpack_from(data)
    return {name: v * 4 if name in _DATA else v for name, v in zip(PORT_COUNTERS_EXT, values, strict=True)}


def port_select(data: bytes) -> int:
    """The PortSelect a PMA reply answers for (byte 1 of its data)."""
    return data[1]
