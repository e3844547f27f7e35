"""The cyclic garbage collector of a process that holds a large heap for long: the ingest
consumer, and the fabric collector (its last discovery: every node and port of the fabric).
Standard library only.

An ingest consumer holds every node's rows in memory (rowcache: ~18 kB of objects per 4-port
node, rings and the health memo included) and replaces a good part of them at every poll. With
CPython's default thresholds (700, 10, 10) a full collection, which walks all of them, comes
every few batches, and walks more the more nodes the process holds. Measured at 200 nodes in
steady state (BENCHMARKS.md, "Steady state"): the hour of polls before the timed ones ran ~12%
faster, the timed polls 2-3% (within the noise). The fabric collector's sweeps of 10,240 switch
ports ran 1.65 -> 1.34 s (full) and 0.80 -> 0.61 s (counters only), bench/bench_fabric.py
--gc-compare. Here, what is alive once the process has started (modules, Django, settings) is
frozen out of every collection, the youngest generation is collected after 50,000 allocations
rather than 700, and a full collection comes after 5,000 of those rather than 100. Reference
cycles are still collected: nothing here turns the collector off.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 50, 100)


def settle() -> None:
    """Call once the process has imported and set up everything, before it starts consuming."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
