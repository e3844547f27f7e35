"""Health rules: a port's view in, findings out. Pure: no I/O, no clock, no Django.

`judge_port` runs every rule on one PortView; `judge_ports` does a whole node's
snapshot and merges device- and node-level findings; `judge_node` is the
staleness check for a node that sent nothing. Each result also names the keys
it could not judge (stale data, unknown counters): lifecycle holds those events
open instead of counting the poll as clean.

One module per concern: common (the judgement, the kinds, whether a port should be up,
words and numbers), link (state, degraded, flapping), counters (symbol errors, the counter
rules, congestion, capped counters), lossless (a RoCE port's PFC pause, pause and CNP storms, loss),
pcie (the device's PCIe link), pciepath (the bridges above it and
the host's PCIe layout), node (stale, clock skew)
and port (judge_port and judge_ports over all of them). What other modules use is named here.
What the rules read and say lives here too: view (a port's PortView and the host's PCIe views), window
(counter deltas over the last minute, five minutes, hour), expectation (the link a port should run at, and who
says so) and findings (what a rule says about a port, device or node).

The lowest of health's three layers: it may import only collectors and fabricweb's top-level modules
(thresholds); never Django, health's models, the database side (`fabricweb.health.records`) or the engine
(`fabricweb.health.engine`), which build on it.
"""

from __future__ import annotations

from . import counters, lossless
from .common import (
    ARMED,
    CRITICAL,
    DEVICE_KINDS,
    INFO,
    INIT,
    LINK_KINDS,
    PORT_KINDS,
    WARNING,
    Judgement,
    ethernet,
    expect_up,
)
from .counters import COUNTER_RULES, CounterRule, congested_share, congestion
from .link import PHYS_MEANING
from .node import judge_clock, judge_node
from .pcie import judge_pcie
from .pciepath import hops_of, judge_host, judge_path, path_key
from .port import judge_port, judge_ports

# The counters each port kind is judged on, every rule module's: those that must be still for a port to be quiet.
KIND_COUNTERS = {**counters.KIND_COUNTERS, **lossless.KIND_COUNTERS}
# Of them, a RoCE port's lossless counters: an InfiniBand port has none; on a RoCE port quiet.py asks the lossless
# rules themselves (lossless_quiet), since they judge one poll's deltas and a busy RoCE port's move at every poll.
ROCE_COUNTERS = frozenset(c for names in lossless.KIND_COUNTERS.values() for c in names)
lossless_quiet = lossless.quiet_key

__all__ = [
    "ARMED",
    "COUNTER_RULES",
    "CRITICAL",
    "DEVICE_KINDS",
    "INFO",
    "INIT",
    "KIND_COUNTERS",
    "LINK_KINDS",
    "PHYS_MEANING",
    "PORT_KINDS",
    "ROCE_COUNTERS",
    "WARNING",
    "CounterRule",
    "Judgement",
    "congested_share",
    "congestion",
    "ethernet",
    "expect_up",
    "hops_of",
    "judge_clock",
    "judge_host",
    "judge_node",
    "judge_path",
    "judge_pcie",
    "judge_port",
    "judge_ports",
    "lossless_quiet",
    "path_key",
]
