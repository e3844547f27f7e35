"""Covers collectors/counters.py.

What a counter file is read with: where it stops (all-ones for its PMA width) and what it is multiplied by to base
units (data counters count 4-octet words), as facts() gives them in one lookup and is_capped and to_base_units
say them."""

from __future__ import annotations

import pytest

from collectors import counters


@pytest.mark.parametrize(
    ("name", "stops_at", "times"),
    [
        ("symbol_error", 65_535, 1),
        ("link_downed", 255, 1),
        ("local_link_integrity_errors", 15, 1),
        ("port_xmit_data", 2**32 - 1, 4),
        ("port_rcv_data_64", 2**64 - 1, 4),
        ("unicast_xmit_packets", 2**64 - 1, 1),
        ("rx_write_requests", 2**64 - 1, 1),  # a name no table lists: 64 bits, counted as it is
    ],
)
def test_a_counter_stops_at_all_ones_for_its_width_and_data_counts_in_bytes(name, stops_at, times):
    assert counters.facts(name) == (stops_at, times)
    assert counters.is_capped(name, stops_at) and not counters.is_capped(name, stops_at - 1)
    assert counters.to_base_units(name, 1000) == 1000 * times
