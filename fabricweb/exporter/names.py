"""Metric names: node_exporter's infiniband collector with `infiniband_` for `node_infiniband_`.

Each counter maps the sysfs file it comes from (a key of Port.counters or Port.counters_ext,
data counters already in bytes) to node_exporter's name and help text, so a site moving
from node_exporter keeps its queries by changing one prefix (shared/docs/DESIGN.md).
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
