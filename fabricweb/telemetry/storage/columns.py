"""Which snapshot counter feeds which sample column.

Names follow docs/infiniband.md §3. Data and packet counts prefer the legacy
64-bit `counters_ext/` files (kernels before 4.5), which do not stop at 32 bits
like their `counters/` twins; everything else exists only in `counters/`.
"""

from __future__ import annotations

from collectors.facts import ERROR_COUNTERS, XMIT_WAIT

# column -> (section, counter file) candidates, best first.
TRAFFIC: dict[str, tuple[tuple[str, str], ...]] = {
    "rcv_bytes": (("counters_ext", "port_rcv_data_64"), ("counters", "port_rcv_data")),
    "xmit_bytes": (("counters_ext", "port_xmit_data_64"), ("counters", "port_xmit_data")),
    "rcv_packets": (("counters_ext", "port_rcv_packets_64"), ("counters", "port_rcv_packets")),
    "xmit_packets": (("counters_ext", "port_xmit_packets_64"), ("counters", "port_xmit_packets")),
}

# Error counters of §3, column -> counter file. The sample column is the lower-case file name.
ERRORS: dict[str, str] = {name.lower(): name for name in ERROR_COUNTERS}

# Ticks the port had data to send but no credits: congestion, judged like the errors.
CONGESTION: dict[str, str] = {"xmit_wait": XMIT_WAIT}

SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    **TRAFFIC,
    **{column: (("counters", name),) for column, name in ERRORS.items()},
    **{column: (("counters", name),) for column, name in CONGESTION.items()},
}
DELTA_COLUMNS: tuple[str, ...] = tuple(SOURCES)

# What the health rules and the `recent` ring call each column: the counters/ file name an
# operator knows from perfquery and sysfs, whichever file the value actually came from.
COUNTER_NAMES: dict[str, str] = {column: sources[-1][1] for column, sources in SOURCES.items()}
DELTA_COUNTERS: tuple[str, ...] = tuple(COUNTER_NAMES.values())  # the same, in DELTA_COLUMNS order
RING_COUNTERS: tuple[str, ...] = (*ERRORS.values(), *CONGESTION.values())
