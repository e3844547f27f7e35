"""Metric names: node_exporter's infiniband collector with `infiniband_` for `node_infiniband_`, and
the community fabric exporter's (treydock/infiniband_exporter) for switch ports.

Each host counter maps the sysfs file it comes from (a key of Port.counters or Port.counters_ext,
data counters already in bytes) to node_exporter's name and help text, so a site moving
from node_exporter keeps its queries by changing one prefix (docs/design.md).

A switch port's counters (read by the fabric collector from the switch's performance agent, stored
under the same file names: collectors/mads/pma.py) keep the names infiniband_exporter gives them,
`infiniband_switch_port_<counter>_total`, so a site moving from it keeps its queries but for the
labels (docs/metrics.md: the mapping).
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.facts import PHYS_STATES, PORT_STATES

PREFIX = "infiniband_"


@dataclass(frozen=True, slots=True)
class CounterName:
    source: str  # "counters" or "counters_ext": the Port field that holds it
    file: str  # the sysfs file name, the key in that field
    name: str  # without the `_total` suffix, which the exposition adds
    help: str


def _c(file: str, name: str, help: str, source: str = "counters") -> CounterName:
    return CounterName(source, file, PREFIX + name, help)


PORT_COUNTERS: tuple[CounterName, ...] = (
    _c(
        "excessive_buffer_overrun_errors",
        "excessive_buffer_overrun_errors",
        "Number of times that OverrunErrors consecutive flow control update periods occurred",
    ),
    _c("link_downed", "link_downed", "Number of times the link failed to recover from an error state and went down"),
    _c(
        "link_error_recovery",
        "link_error_recovery",
        "Number of times the link successfully recovered from an error state",
    ),
    _c(
        "local_link_integrity_errors",
        "local_link_integrity_errors",
        "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors",
    ),
    _c(
        "multicast_rcv_packets", "multicast_packets_received", "Number of multicast packets received (including errors)"
    ),
    _c(
        "multicast_xmit_packets",
        "multicast_packets_transmitted",
        "Number of multicast packets transmitted (including errors)",
    ),
    _c(
        "port_rcv_constraint_errors",
        "port_constraint_errors_received",
        "Number of packets received on the switch physical port that are discarded",
    ),
    _c(
        "port_xmit_constraint_errors",
        "port_constraint_errors_transmitted",
        "Number of packets not transmitted from the switch physical port",
    ),
    _c("port_rcv_data", "port_data_received_bytes", "Number of data octets received on all links"),
    _c("port_xmit_data", "port_data_transmitted_bytes", "Number of data octets transmitted on all links"),
    _c(
        "port_rcv_discards",
        "port_discards_received",
        "Number of inbound packets discarded by the port because the port is down or congested",
    ),
    _c(
        "port_xmit_discards",
        "port_discards_transmitted",
        "Number of outbound packets discarded by the port because the port is down or congested",
    ),
    _c(
        "port_rcv_errors",
        "port_errors_received",
        "Number of packets containing an error that were received on this port",
    ),
    _c(
        "port_rcv_packets",
        "port_packets_received",
        "Number of packets received on all VLs by this port (including errors)",
    ),
    _c(
        "port_xmit_packets",
        "port_packets_transmitted",
        "Number of packets transmitted on all VLs from this port (including errors)",
    ),
    _c(
        "port_rcv_remote_physical_errors",
        "port_receive_remote_physical_errors",
        "Number of packets marked with the EBP delimiter received on the port",
    ),
    _c(
        "port_rcv_switch_relay_errors",
        "port_receive_switch_relay_errors",
        "Number of packets that could not be forwarded by the switch",
    ),
    _c(
        "port_xmit_wait",
        "port_transmit_wait",
        "Number of ticks during which the port had data to transmit but no data was sent during the entire tick",
    ),
    _c("symbol_error", "symbol_error", "Number of minor link errors detected on one or more physical lanes"),
    _c("unicast_rcv_packets", "unicast_packets_received", "Number of unicast packets received (including errors)"),
    _c(
        "unicast_xmit_packets",
        "unicast_packets_transmitted",
        "Number of unicast packets transmitted (including errors)",
    ),
    _c("VL15_dropped", "vl15_dropped", "Number of incoming VL15 packets dropped"),
    # Kernels before 4.5: the 64-bit counters in counters_ext/.
    _c("port_rcv_data_64", "legacy_data_received_bytes", "Number of data octets received on all links", "counters_ext"),
    _c(
        "port_xmit_data_64",
        "legacy_data_transmitted_bytes",
        "Number of data octets transmitted on all links",
        "counters_ext",
    ),
    _c(
        "port_multicast_rcv_packets",
        "legacy_multicast_packets_received",
        "Number of multicast packets received",
        "counters_ext",
    ),
    _c(
        "port_multicast_xmit_packets",
        "legacy_multicast_packets_transmitted",
        "Number of multicast packets transmitted",
        "counters_ext",
    ),
    _c(
        "port_rcv_packets_64", "legacy_packets_received", "Number of data packets received on all links", "counters_ext"
    ),
    _c(
        "port_xmit_packets_64",
        "legacy_packets_transmitted",
        "Number of data packets transmitted on all links",
        "counters_ext",
    ),
    _c(
        "port_unicast_rcv_packets",
        "legacy_unicast_packets_received",
        "Number of unicast packets received",
        "counters_ext",
    ),
    _c(
        "port_unicast_xmit_packets",
        "legacy_unicast_packets_transmitted",
        "Number of unicast packets transmitted",
        "counters_ext",
    ),
)

# hw_counters files that are settings, not counts: exported as nothing.
HW_NOT_COUNTERS = frozenset({"lifespan"})


def _legend(states: dict[int, str]) -> str:
    return ", ".join(f"{i}: {name}" for i, name in sorted(states.items()))


STATE_HELP = f"State of the InfiniBand port ({_legend(PORT_STATES)})"
PHYS_STATE_HELP = f"Physical state of the InfiniBand port ({_legend(PHYS_STATES)})"


@dataclass(frozen=True, slots=True)
class CounterFamily:
    """One counter family of the port rows: where each port's value comes from, in order of
    preference: (Port field, key) pairs, the first with a value that is not capped wins."""

    name: str  # without the `_total` suffix
    help: str
    sources: tuple[tuple[str, str], ...]


HOST_COUNTERS: tuple[CounterFamily, ...] = tuple(
    CounterFamily(c.name, c.help, ((c.source, c.file),)) for c in PORT_COUNTERS
)


def _s(name: str, help: str, *sources: tuple[str, str]) -> CounterFamily:
    return CounterFamily(PREFIX + "switch_port_" + name, help, sources or (("counters", name),))


# The 64-bit data and packet counts of PortCountersExtended where the switch answers it (counters_ext,
# `_64`), else PortCounters' 32-bit ones (counters), which stop at all-ones within seconds on a busy link.
SWITCH_COUNTERS: tuple[CounterFamily, ...] = (
    _s(
        "transmit_data_bytes",
        "Data octets the switch port transmitted (PortXmitData x 4; 64-bit where the switch has PortCountersExtended)",
        ("counters_ext", "port_xmit_data_64"),
        ("counters", "port_xmit_data"),
    ),
    _s(
        "receive_data_bytes",
        "Data octets the switch port received (PortRcvData x 4; 64-bit where the switch has PortCountersExtended)",
        ("counters_ext", "port_rcv_data_64"),
        ("counters", "port_rcv_data"),
    ),
    _s(
        "transmit_packets",
        "Packets the switch port transmitted on all VLs (PortXmitPkts)",
        ("counters_ext", "port_xmit_packets_64"),
        ("counters", "port_xmit_packets"),
    ),
    _s(
        "receive_packets",
        "Packets the switch port received on all VLs, errors included (PortRcvPkts)",
        ("counters_ext", "port_rcv_packets_64"),
        ("counters", "port_rcv_packets"),
    ),
    _s(
        "unicast_transmit_packets",
        "Unicast packets transmitted (PortUnicastXmitPkts)",
        ("counters", "unicast_xmit_packets"),
    ),
    _s("unicast_receive_packets", "Unicast packets received (PortUnicastRcvPkts)", ("counters", "unicast_rcv_packets")),
    _s(
        "multicast_transmit_packets",
        "Multicast packets transmitted (PortMulticastXmitPkts)",
        ("counters", "multicast_xmit_packets"),
    ),
    _s(
        "multicast_receive_packets",
        "Multicast packets received (PortMulticastRcvPkts)",
        ("counters", "multicast_rcv_packets"),
    ),
    _s(
        "symbol_error",
        "Minor link errors on one or more physical lanes (SymbolErrorCounter)",
        ("counters", "symbol_error"),
    ),
    _s(
        "link_error_recovery",
        "Times the link recovered from an error state by retraining (LinkErrorRecoveryCounter)",
        ("counters", "link_error_recovery"),
    ),
    _s(
        "link_downed",
        "Times the link failed to recover from an error state and went down (LinkDownedCounter)",
        ("counters", "link_downed"),
    ),
    _s("receive_errors", "Packets with an error received on the port (PortRcvErrors)", ("counters", "port_rcv_errors")),
    _s(
        "receive_remote_physical_errors",
        "Packets received marked bad by an earlier hop, the EBP delimiter (PortRcvRemotePhysicalErrors)",
        ("counters", "port_rcv_remote_physical_errors"),
    ),
    _s(
        "receive_switch_relay_errors",
        "Packets the switch could not forward (PortRcvSwitchRelayErrors)",
        ("counters", "port_rcv_switch_relay_errors"),
    ),
    _s(
        "transmit_discards",
        "Outbound packets discarded because the port was down or congested (PortXmitDiscards)",
        ("counters", "port_xmit_discards"),
    ),
    _s(
        "transmit_constraint_errors",
        "Packets not transmitted because of partition or raw-packet constraints (PortXmitConstraintErrors)",
        ("counters", "port_xmit_constraint_errors"),
    ),
    _s(
        "receive_constraint_errors",
        "Packets received and discarded because of partition or raw-packet constraints (PortRcvConstraintErrors)",
        ("counters", "port_rcv_constraint_errors"),
    ),
    _s(
        "local_link_integrity_errors",
        "Times the local physical errors exceeded LocalPhyErrors (LocalLinkIntegrityErrors)",
        ("counters", "local_link_integrity_errors"),
    ),
    _s(
        "excessive_buffer_overrun_errors",
        "Times OverrunErrors consecutive flow control update periods had an overrun (ExcessiveBufferOverrunErrors)",
        ("counters", "excessive_buffer_overrun_errors"),
    ),
    _s("vl15_dropped", "Incoming VL15 (subnet management) packets dropped (VL15Dropped)", ("counters", "VL15_dropped")),
    _s(
        "transmit_wait",
        "Ticks during which the port had data to transmit but no flow control credits (PortXmitWait)",
        ("counters", "port_xmit_wait"),
    ),
)
