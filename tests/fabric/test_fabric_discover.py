"""Covers collectors/mads/mad.py, collectors/mads/sweep.py.

Discovery and counters on a small fabric answered in-process, replies laid out by libibmad: a bad reply
(an error status, a reply for another port) costs its own value and an error naming it, never the sweep.

ibsim answers every query well; these are the replies it cannot be made to send.
"""

from __future__ import annotations

from collectors.mads import mad
from collectors.mads.sweep import Sweeper, SweepSettings
from tests.fabric.libibmad import Buffer

CA_A, SWITCH, CA_B = 0x0C42A10300000010, 0xB8599F0300000100, 0x0C42A10300000020
# guid -> (node type, ports, description, {port: (peer guid, peer port)})
FABRIC = {
    CA_A: (1, 1, "cn001 mlx5_0", {1: (SWITCH, 1)}),
    SWITCH: (2, 4, "MF0;leaf01:MQM8790-HS2F/U1", {1: (CA_A, 1), 3: (CA_B, 1)}),
    CA_B: (1, 1, "cn002 mlx5_0", {1: (SWITCH, 3)}),
}


class FabricPort:
    """Answers directed-route SMPs and PMA queries for FABRIC, from CA_A port 1; `spoil(attribute, port)`
    makes one query answer with an error status, `wrong_port` one PMA reply speak for another port."""

    def __init__(self) -> None:
        self.replies: list[bytes] = []
        self.spoiled: set[tuple[int, int]] = set()
        self.wrong_port: set[int] = set()

    def send(self, mgmt_class, query, lid, qp, qkey, timeout_ms):
        reply = bytearray(query)
        reply[3] = mad.METHOD_GET_RESPONSE
        attribute = int.from_bytes(query[16:18])
        modifier = int.from_bytes(query[20:24])
        if mgmt_class == mad.CLASS_SUBN_DIRECTED_ROUTE:
            guid, entry = self._route(tuple(query[129 : 129 + query[7]]))
            data = self._smp(guid, entry, attribute, modifier)
            spoil = (attribute, modifier)
        else:
            port = query[mad.DATA_OFFSET + 1]
            data = self._pma(attribute, 5 if port in self.wrong_port else port)
            spoil = (attribute, port)
        reply[mad.DATA_OFFSET : mad.DATA_OFFSET + len(data)] = data
        if spoil in self.spoiled:
            reply[4:6] = (0x001C).to_bytes(2)  # "invalid attribute or modifier"
        self.replies.append(bytes(reply))

    def recv(self, timeout_ms):
        return (self.replies.pop(0), 0) if self.replies else None

    def _route(self, path: tuple[int, ...]) -> tuple[int, int]:
        guid, entry = CA_A, 1
        for out in path:
            guid, entry = FABRIC[guid][3][out]
        return guid, entry

    def _smp(self, guid: int, entry: int, attribute: int, modifier: int) -> bytes:
        node_type, ports, desc, peers = FABRIC[guid]
        buf = Buffer(64)
        if attribute == mad.ATTR_NODE_INFO:
            buf.set("NodeType", node_type).set("NumPorts", ports).set("LocalPort", entry, after="NodeType")
            buf.set("Guid", guid, wide=True).set("PortGuid", guid + (entry if node_type == 1 else 0), wide=True)
            return buf.data
        if attribute == mad.ATTR_NODE_DESCRIPTION:
            return desc.encode().ljust(64, b"\0")
        number = modifier or entry
        up = number in peers or (node_type == 2 and number == 0)
        buf.set("LinkState", 4 if up else 1).set("PhysLinkState", 5 if up else 2)
        buf.set("LinkWidthActive", 8).set("LinkWidthSupported", 0x0B).set("LinkWidthEnabled", 8)
        buf.set("LinkSpeedActive", 4).set("LinkSpeedSupported", 7).set("LinkSpeedEnabled", 7)
        buf.set("Lid", 7 if node_type == 2 else (3 if guid == CA_A else 4))
        return buf.data

    def _pma(self, attribute: int, port: int) -> bytes:
        buf = Buffer(64)
        buf.set("PortSelect", port, after="Mkey")
        if attribute == mad.ATTR_PORT_COUNTERS:
            buf.set("SymbolErrorCounter", port * 10, after="PortSelect")
        return buf.data


def sweep(port: FabricPort):
    return Sweeper(port, "test", SweepSettings(timeout_ms=50, retries=0)).sweep()


def test_it_discovers_every_node_port_and_link_with_both_ends():
    result = sweep(FabricPort())
    assert result.errors == [] and result.local == (CA_A, 1)
    nodes = {n.guid: n for n in result.nodes}
    assert set(nodes) == {CA_A, SWITCH, CA_B} and nodes[SWITCH].description == "MF0;leaf01:MQM8790-HS2F/U1"
    switch = nodes[SWITCH]
    assert {n: p.peer for n, p in switch.ports.items() if p.peer} == {1: (CA_A, 1), 3: (CA_B, 1)}
    assert nodes[CA_B].ports[1].peer == (SWITCH, 3) and nodes[CA_B].ports[1].port_guid == CA_B + 1
    assert switch.lid == 7 and (switch.ports[3].lanes, switch.ports[3].speed) == (12, "QDR")
    assert switch.ports[2].state == 1 and switch.ports[2].peer is None  # down, and still a port of the switch
    assert [switch.ports[n].counters["symbol_error"] for n in (1, 2, 3, 4)] == [10, 20, 30, 40]


def test_a_portinfo_answered_with_an_error_costs_that_port_alone():
    port = FabricPort()
    port.spoiled.add((mad.ATTR_PORT_INFO, 3))
    result = sweep(port)
    switch = next(n for n in result.nodes if n.guid == SWITCH)
    assert switch.ports[3].state is None and switch.ports[3].lanes is None
    assert [(e.path, e.reason) for e in result.errors] == [
        (
            "MF0;leaf01:MQM8790-HS2F/U1 (0xb8599f0300000100) port 3",
            "PortInfo: status 0x001c (invalid attribute or modifier) for attribute 0x0015",
        )
    ]
    # The far end was still found from the CA's side, and every other port and counter is there.
    assert switch.ports[3].peer == (CA_B, 1) and len(result.nodes) == 3
    assert switch.ports[4].state == 1 and switch.ports[3].counters["symbol_error"] == 30


def test_a_counters_reply_for_another_port_is_refused_not_filed_under_the_wrong_port():
    port = FabricPort()
    port.wrong_port.add(2)
    result = sweep(port)
    switch = next(n for n in result.nodes if n.guid == SWITCH)
    assert switch.ports[2].counters["symbol_error"] is None
    assert switch.ports[1].counters["symbol_error"] == 10
    reasons = sorted(e.reason for e in result.errors)
    assert reasons == [
        "PortCounters: unreadable reply (answers for port 5)",
        "PortCountersExtended: unreadable reply (answers for port 5)",
    ]
