"""Every fact derived from a port's row, stated once: in SQL (Q and Case expressions to filter and count
with) and in Python (for one port object). The dashboard, the JSON API, /metrics and the alerts' payload
take them from here (`from fabricweb.inventory import portfacts`; portfacts.X); tests/test_portfacts.py
fails when another module states one again.

- **up**: ACTIVE or ACTIVE_DEFER (collectors.facts.is_up, the state alone) and still reported by its
  node. Kept on the port row by the database (Port.up, a stored generated column built from UP_FLAG).
- **degraded**: up, and trained below its expected link in speed or in width, judged separately as
  collectors.link.judge_link does; unknown on either side is not degraded (Port.degraded, DEGRADED_FLAG).
- **has a link**: still reported, and ACTIVE, or physically LinkUp and not DOWN (INIT and ARMED have
  a trained link the subnet manager has not activated). A DOWN/Polling port has none, whatever its
  `rate` file says: the kernel prints `10 Gb/sec (4X SDR)` for a port with no link.
- **the link** (`Link`): as operators name it, `4X EDR` on InfiniBand, `100GbE` on an Ethernet (RoCE)
  port (which the kernel reports in InfiniBand terms, 4X EDR), `100GbE trained at 40GbE` on one below its
  expected link; its Gb/s and bytes/s capacity. None without a link.
- **should be up**: an operator's word (Port.expect_up: a link policy's expect_up, or the expected
  cabling naming the port, written by the health engine) else its history (Port.ever_up), as the
  health rules decide whether a port that is down is an outage.
- **status**, what an operator sees, one of `Status`, worst first: down (no link, and it should be up),
  no subnet manager (the link trained, the port stays INIT or ARMED), degraded, vanished (gone from
  its node's snapshots), unknown (its node stopped reporting, or its switch is no longer reached:
  what it last said is not its state now), up, not connected (no link, and nothing says it should
  have one: a port never cabled is not an outage).
- a cable's state from its two ends (LINK_STATES, `link_states`) for /api/v1/links and /fabric/.

Staleness enters through `node_stale_q` (SQL) and `node_is_stale` (one node), and nowhere else.

One package, a module per concern, every public name re-exported here:

- statuses.py: up, degraded, has a link, no subnet manager, should be up, staleness and the status;
- links.py: the link as it is named and its capacity, and the HCA's PCIe link;
- pcie.py: the HCA's PCIe path hop by hop up to the CPU, and the node's GPUs in nvidia-smi topo words;
- cables.py: a cable's state from its two ends.
"""

from __future__ import annotations

from .cables import (
    LINK_RANK,
    LINK_STATE,
    LINK_STATES,
    link_is_up,
    link_states,
)
from .links import (
    BYTES_PER_GBIT,
    Link,
    capacity_bytes_per_second,
    capacity_gbps,
    expected_link,
    link,
    named_link,
    pci_function_link,
    pcie_link,
    sample_link,
)
from .pcie import NO_BRIDGE, NO_TREE, RELATION_LEGEND, UPLINK, absent_reason, gpu_matrix, gpus, pcie_path
from .statuses import (
    DEGRADED,
    DEGRADED_FLAG,
    ETHERNET,
    HAS_LINK,
    NO_SM,
    PRESENT,
    SHOULD_BE_UP,
    SHOULD_BE_UP_FLAG,
    STATUSES,
    SWITCH,
    UP,
    UP_FLAG,
    UP_STATUSES,
    WORST_FIRST,
    Status,
    annotate,
    filtered,
    has_link,
    has_link_flag,
    is_degraded,
    is_up,
    no_subnet_manager,
    node_is_stale,
    node_stale_q,
    node_unknown,
    should_be_up,
    status,
    status_case,
    status_counts,
    status_now,
    tally,
    unknown_q,
    unreachable,
    unreachable_q,
)

__all__ = [
    "BYTES_PER_GBIT",
    "DEGRADED",
    "DEGRADED_FLAG",
    "ETHERNET",
    "HAS_LINK",
    "LINK_RANK",
    "LINK_STATE",
    "LINK_STATES",
    "NO_BRIDGE",
    "NO_SM",
    "NO_TREE",
    "PRESENT",
    "RELATION_LEGEND",
    "SHOULD_BE_UP",
    "SHOULD_BE_UP_FLAG",
    "STATUSES",
    "SWITCH",
    "UP",
    "UPLINK",
    "UP_FLAG",
    "UP_STATUSES",
    "WORST_FIRST",
    "Link",
    "Status",
    "absent_reason",
    "annotate",
    "capacity_bytes_per_second",
    "capacity_gbps",
    "expected_link",
    "filtered",
    "gpu_matrix",
    "gpus",
    "has_link",
    "has_link_flag",
    "is_degraded",
    "is_up",
    "link",
    "link_is_up",
    "link_states",
    "named_link",
    "no_subnet_manager",
    "node_is_stale",
    "node_stale_q",
    "node_unknown",
    "pci_function_link",
    "pcie_link",
    "pcie_path",
    "sample_link",
    "should_be_up",
    "status",
    "status_case",
    "status_counts",
    "status_now",
    "tally",
    "unknown_q",
    "unreachable",
    "unreachable_q",
]
