"""PMA counter facts: widths (for cap detection) and units (data is octets / 4).

PMA counters do not wrap; they stop at all-ones for their width until reset
(docs/infiniband.md §3).
"""

from __future__ import annotations

from functools import cache

# Bits of each counter in the non-extended PortCounters attribute.
PMA_WIDTH_BITS: dict[str, int] = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_data": 32,
    "port_rcv_data": 32,
    "port_xmit_packets": 32,
    "port_rcv_packets": 32,
    "port_xmit_wait": 32,
}
# Everything else (unicast_*, multicast_*, counters_ext/*) is 64 bits wide.
DEFAULT_WIDTH_BITS = 64

# Counters that count octets divided by 4, in counters/ and in the legacy counters_ext/.
DATA_COUNTERS = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_data_64", "port_rcv_data_64"})


def width_bits(name: str) -> int:
    return PMA_WIDTH_BITS.get(name, DEFAULT_WIDTH_BITS)


@cache
def facts(name: str) -> tuple[int, int]:
    """(the raw value at which counter `name` stops: all-ones for its PMA width, what a raw value is multiplied by
    to base units: 4 for data counters, whose PMA counts 4-octet words), in one lookup: the agent reads ~100
    counter files at every poll."""
    return (1 << width_bits(name)) - 1, 4 if name in DATA_COUNTERS else 1


def is_capped(name: str, raw: int) -> bool:
    """True when `raw` is all-ones for the counter's PMA width: the counter has stopped."""
    return raw == facts(name)[0]


def to_base_units(name: str, raw: int) -> int:
    """Bytes for data counters, the raw value otherwise."""
    return raw * facts(name)[1]
