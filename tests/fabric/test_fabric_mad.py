"""Covers collectors/mads/mad.py.

The collector's MAD codec against rdma-core's libibmad: what libibmad writes, the collector reads the same.

ibsim simulates SDR, DDR and QDR links only: HDR, NDR and 2X links are tested here, on replies
laid out by libibmad's own field table (the one smpquery and iblinkinfo decode with).
"""

from __future__ import annotations

import pytest

from collectors.mads import mad
from tests.fabric.libibmad import Buffer

CAP_EXT_SPEEDS = 1 << 14


def port_info(**fields) -> bytes:
    buf = Buffer(64)
    for name, value in fields.items():
        buf.set(name, value)
    return buf.data


def test_it_reads_portinfo_as_libibmad_lays_it_out():
    data = port_info(
        Lid=0x1A,
        SMLid=1,
        CapMask=0x02514868,
        LocalPort=3,
        LinkWidthEnabled=2,
        LinkWidthSupported=0x0B,
        LinkWidthActive=2,
        LinkSpeedSupported=7,
        LinkState=4,
        PhysLinkState=5,
        LMC=2,
        LinkSpeedActive=4,
        LinkSpeedEnabled=7,
        MtuCap=5,
        NeighborMTU=4,
    )
    info = mad.decode_port_info(data)
    assert (info.lid, info.sm_lid, info.cap_mask, info.local_port, info.lmc) == (0x1A, 1, 0x02514868, 3, 2)
    assert (info.state, info.phys_state) == (4, 5)
    assert (info.width_active, info.speed_active) == (4, "QDR")
    assert info.width_supported == {1, 4, 12} and info.width_enabled == {4}
    assert info.speed_supported == {"SDR", "DDR", "QDR"} == info.speed_enabled
    assert (info.mtu_cap, info.neighbor_mtu) == (5, 4)


@pytest.mark.parametrize(
    ("ext_active", "width_bit", "expected"),
    [(8, 2, (4, "NDR")), (4, 2, (4, "HDR")), (4, 16, (2, "HDR")), (2, 1, (1, "EDR")), (1, 8, (12, "FDR"))],
)
def test_it_reads_fdr_to_ndr_from_the_extended_speed_fields(ext_active, width_bit, expected):
    data = port_info(
        CapMask=CAP_EXT_SPEEDS,
        LinkWidthActive=width_bit,
        LinkWidthSupported=0x1F,
        LinkSpeedSupported=7,
        LinkSpeedActive=1,  # what an NDR port says here: the extended field is the truth
        LinkSpeedEnabled=7,
        LinkSpeedExtActive=ext_active,
        LinkSpeedExtSupported=0xF,
        LinkSpeedExtEnabled=0x7,
        LinkState=4,
        PhysLinkState=5,
    )
    info = mad.decode_port_info(data)
    assert (info.width_active, info.speed_active) == expected
    assert info.speed_supported == {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR", "NDR"}
    assert info.speed_enabled == {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR"}
    assert info.width_supported == {1, 2, 4, 8, 12}


def test_it_ignores_extended_speed_fields_the_port_does_not_claim():
    data = port_info(LinkSpeedActive=4, LinkSpeedExtActive=8, LinkSpeedExtSupported=0xF, LinkSpeedSupported=7)
    info = mad.decode_port_info(data)
    assert info.speed_active == "QDR"
    assert info.speed_supported == {"SDR", "DDR", "QDR"}


def test_an_unknown_width_or_speed_code_reads_as_unknown_not_as_another():
    info = mad.decode_port_info(port_info(LinkWidthActive=0x20, LinkSpeedActive=8))
    assert info.width_active is None and info.speed_active is None


def test_it_reads_nodeinfo_as_libibmad_lays_it_out():
    buf = Buffer(64)
    buf.set("NodeType", 2).set("NumPorts", 40).set("DevId", 0xD2F0).set("Revision", 0xA0)
    buf.set("LocalPort", 17, after="NodeType").set("VendorId", 0x2C9)
    buf.set("SystemGuid", 0xB8599F0300001111, wide=True).set("Guid", 0xB8599F0300002222, wide=True)
    buf.set("PortGuid", 0xB8599F0300003333, wide=True)
    info = mad.decode_node_info(buf.data)
    guids = 0xB8599F0300001111, 0xB8599F0300002222, 0xB8599F0300003333
    assert info == mad.NodeInfo(2, 40, *guids, 0xD2F0, 0xA0, 17, 0x2C9)


def test_it_reads_every_portcounters_field_in_base_units():
    buf = Buffer(64)
    names = {
        "SymbolErrorCounter": ("symbol_error", 0xFFFE),
        "LinkErrorRecoveryCounter": ("link_error_recovery", 0xFD),
        "LinkDownedCounter": ("link_downed", 0xFC),
        "PortRcvErrors": ("port_rcv_errors", 0xFFFB),
        "PortRcvRemotePhysicalErrors": ("port_rcv_remote_physical_errors", 0xFFFA),
        "PortRcvSwitchRelayErrors": ("port_rcv_switch_relay_errors", 0xFFF9),
        "PortXmitDiscards": ("port_xmit_discards", 0xFFF8),
        "PortXmitConstraintErrors": ("port_xmit_constraint_errors", 0xF7),
        "PortRcvConstraintErrors": ("port_rcv_constraint_errors", 0xF6),
        "LocalLinkIntegrityErrors": ("local_link_integrity_errors", 0xE),
        "ExcessiveBufferOverrunErrors": ("excessive_buffer_overrun_errors", 0xD),
        "VL15Dropped": ("VL15_dropped", 0xFFF5),
        "PortXmitData": ("port_xmit_data", 0x10000001),
        "PortRcvData": ("port_rcv_data", 0x10000002),
        "PortXmitPkts": ("port_xmit_packets", 0x10000003),
        "PortRcvPkts": ("port_rcv_packets", 0x10000004),
        "PortXmitWait": ("port_xmit_wait", 0x10000005),
    }
    buf.set("PortSelect", 12, after="Mkey")
    for field, (_, value) in names.items():
        buf.set(field, value, after="SymbolErrorCounter" if field != "SymbolErrorCounter" else None)
    decoded = mad.decode_port_counters(buf.data)
    for name, value in names.values():
        expected = value * 4 if name.endswith("_data") else value
        assert decoded[name] == expected, name
    assert set(decoded) == set(mad.PORT_COUNTERS)
    assert mad.port_select(buf.data) == 12


def test_it_reads_every_portcountersextended_field_in_base_units():
    buf = Buffer(128)
    anchor = "PortSelect"
    values = {
        "PortXmitData": 1 << 40,
        "PortRcvData": (1 << 40) + 1,
        "PortXmitPkts": (1 << 41) + 2,
        "PortRcvPkts": (1 << 41) + 3,
        "PortUnicastXmitPkts": 5,
        "PortUnicastRcvPkts": 6,
        "PortMulticastXmitPkts": 7,
        "PortMulticastRcvPkts": 8,
    }
    for field, value in values.items():
        # PortXmitData... are PortCounters' names too: the extended attribute's are the second after PortSelect.
        shared = not field.startswith(("PortUnicast", "PortMulticast"))
        buf.set(field, value, after=anchor, occurrence=2 if shared else 1, wide=True)
    decoded = mad.decode_port_counters_ext(buf.data)
    assert decoded == {
        "port_xmit_data_64": (1 << 40) * 4,
        "port_rcv_data_64": ((1 << 40) + 1) * 4,
        "port_xmit_packets_64": (1 << 41) + 2,
        "port_rcv_packets_64": (1 << 41) + 3,
        "unicast_xmit_packets": 5,
        "unicast_rcv_packets": 6,
        "multicast_xmit_packets": 7,
        "multicast_rcv_packets": 8,
    }


def test_a_directed_route_query_is_what_libibmad_would_send():
    query = mad.directed_get(0xABCDEF01, mad.ATTR_PORT_INFO, 7, (1, 21, 3))
    buf = Buffer().load(query)
    assert buf.get("MadBaseVersion") == 1 and buf.get("MadMgmtClass") == 0x81 and buf.get("MadClassVersion") == 1
    assert buf.get("MadMethod") == 1 and buf.get("MadIsResponse") == 0
    assert buf.get("DrSmpHopCnt") == 3 and buf.get("DrSmpHopPtr") == 0 and buf.get("DrSmpDirection") == 0
    assert buf.get("MadAttr") == 0x15 and buf.get("MadModifier") == 7
    assert buf.get("MadTRID", wide=True) == 0xABCDEF01
    assert buf.get("DrSmpDLID") == 0xFFFF and buf.get("DrSmpSLID") == 0xFFFF
    assert query[128:132] == bytes([0, 1, 21, 3])  # InitialPath: entry 0 unused, then the output ports


def test_a_route_longer_than_63_hops_is_refused():
    with pytest.raises(ValueError, match="at most 63 hops"):
        mad.directed_get(1, mad.ATTR_NODE_INFO, 0, tuple([1] * 64))


def test_a_pma_query_selects_its_port():
    buf = Buffer().load(mad.pma_get(5, mad.ATTR_PORT_COUNTERS_EXT, 33))
    assert buf.get("MadMgmtClass") == 4 and buf.get("MadAttr") == 0x1D and buf.get("MadMethod") == 1
    assert mad.port_select(mad.pma_get(5, mad.ATTR_PORT_COUNTERS_EXT, 33)[64:]) == 33


def _reply(method=0x81, status=0, size=256, mgmt_class=0x04) -> bytes:
    buf = Buffer()
    buf.set("MadBaseVersion", 1).set("MadMgmtClass", mgmt_class).set("MadClassVersion", 1)
    buf.set("MadMethod", method & 0x7F).set("MadIsResponse", method >> 7).set("MadStatus", status)
    buf.set("MadTRID", (7 << 32) | 42, wide=True).set("MadAttr", 0x12)
    return buf.data[:size]


def test_a_reply_keeps_its_tid_lower_half_and_its_data():
    reply = mad.read_reply(_reply())
    assert (reply.tid, reply.attribute, len(reply.data)) == (42, 0x12, 192)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (_reply(size=100), "a reply of 100 bytes, not 256"),
        (_reply(method=0x01), "method 0x01, not GetResp"),
        (_reply(status=0x000C), "status 0x000c (method/attribute combination not supported)"),
        (_reply(mgmt_class=0x03), "class 0x03: not a reply to this collector"),
    ],
)
def test_a_reply_that_is_not_a_good_getresp_is_an_error_naming_why(raw, message):
    with pytest.raises(mad.MadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mad.read_reply(raw)


def test_a_node_description_is_printable_text_whatever_the_bytes():
    data = "leaf07 \x1b[31m<b>\u00e9</b>".encode() + b"\xff\xfe\x00trailing garbage"
    assert mad.decode_node_description(data.ljust(64, b"\0")) == "leaf07 [31m<b>é</b>\ufffd\ufffd"
    assert mad.decode_node_description(b"\0" * 64) == ""
