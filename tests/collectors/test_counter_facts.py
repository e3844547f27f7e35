"""Covers collectors/counters.py.

The facts a counter file is read with (where it stops, what it is multiplied by) are is_capped's and
to_base_units' for every counter name there is, and for one nobody listed."""

from __future__ import annotations

import pytest

from collectors import counters

NAMES = sorted({*counters.PMA_WIDTH_BITS, *counters.DATA_COUNTERS, "unicast_xmit_packets", "rx_write_requests"})


@pytest.mark.parametrize("name", NAMES)
def test_a_counters_facts_are_what_is_capped_and_to_base_units_say(name):
    ones, times = counters.facts(name)
    assert counters.is_capped(name, ones) and not counters.is_capped(name, ones - 1)
    assert counters.to_base_units(name, 1000) == 1000 * times


def test_data_counters_are_read_in_bytes_and_a_16_bit_counter_stops_at_65535():
    assert counters.facts("port_xmit_data") == (2**32 - 1, 4)
    assert counters.facts("symbol_error") == (65_535, 1)
