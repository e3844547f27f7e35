"""Everything the health rules need to know about one port at one poll.

Ingest builds a PortView from its stored state; the rules never look anything up.
Unknown is None (or empty), never 0: a counter delta of None means the rate is
unknown for that poll (the counter was reset or is capped), not that nothing happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.facts import LINK_UP, PHYS_STATES, PORT_STATES, is_up
from collectors.link import Rate

from .expectation import LinkPolicy, Majority

# One earlier poll: (collected_at in epoch seconds, its interval in s, {counter: delta or None}).
# Counters left out of the mapping count as 0 (ingest may store only non-zero deltas).
Poll = tuple[float, float, Mapping[str, int | None]]

# Re-exported for the rules (collectors/facts.py is their one home).
__all__ = [
    "LINK_UP",
    "PHYS_STATES",
    "PORT_STATES",
    "CardView",
    "GpuView",
    "HopView",
    "HostView",
    "PcieView",
    "Poll",
    "PortView",
]


@dataclass(frozen=True, slots=True)
class HopView:
    """One bridge above the HCA's function (Device.pcie_path's hops): its link, and where it sits."""

    address: str
    words: str  # in an operator's words: "PCIe switch uplink", "root port", "PCIe switch port"
    current_gts: float | None = None
    current_width: int | None = None
    max_gts: float | None = None
    max_width: int | None = None
    numa_node: int | None = None
    local_cpulist: str | None = None


@dataclass(frozen=True, slots=True)
class PcieView:
    """The HCA's PCIe link (collectors.model.PciLink): GT/s per lane and lane counts; and the bridges above it,
    nearest first, root port last (() when there are none; None when its agent sends no PCIe tree)."""

    current_gts: float | None = None
    current_width: int | None = None
    max_gts: float | None = None
    max_width: int | None = None
    path: tuple[HopView, ...] | None = None


@dataclass(frozen=True, slots=True)
class PortView:
    node: str
    device: str
    port: int
    ts: float = 0.0  # this poll's collected_at, epoch seconds
    interval_s: float = 10.0  # seconds since the previous poll of this port
    hca_type: str | None = None
    # NodeInfo.DeviceID (collectors.xmitwait.device_id): what one port_xmit_wait count is; None: not known.
    device_id: int | None = None
    state_id: int | None = None
    state_name: str | None = None
    phys_state_id: int | None = None
    phys_state_name: str | None = None
    # Consecutive polls (this one included) in this state and physical state.
    state_polls: int = 1
    link: Rate | None = None
    link_layer: str | None = None
    ever_up: bool = False  # has been ACTIVE at some poll
    policy: LinkPolicy | None = None  # expectation.match_policy(...)
    best_link: Rate | None = None  # expectation.remember_best(...) over past polls
    majority: Majority | None = None  # expectation.fabric_majority(...)[hca_type]
    deltas: Mapping[str, int | None] = field(default_factory=dict)  # this poll
    capped: frozenset[str] = frozenset()
    # Earlier polls of the last hour, oldest first; a poll at or after `ts` is ignored
    # so that passing this poll here too cannot count it twice.
    recent: Sequence[Poll] = ()
    pcie: PcieView | None = None
    # The link as the fabric collector sees it (fabricweb.fabric.links): the far end in words, what both
    # ends support (the expected link after policy), and whether this end speaks for the link's state.
    far_end: str | None = None
    capability: Rate | None = None
    link_owner: bool = True
    node_missed_polls: int = 0  # polls since the node last sent a snapshot
    device_missing_polls: int = 0  # polls the device has been absent from its node's snapshots
    port_missing_polls: int = 0  # polls the port has been absent from its device

    @property
    def is_active(self) -> bool:
        """The state alone (collectors.facts.is_up): the rules judge what this poll observed."""
        return is_up(self.state_id)

    @property
    def state_text(self) -> str:
        return self.state_name or PORT_STATES.get(self.state_id, "unknown")

    @property
    def phys_text(self) -> str | None:
        if self.phys_state_name:
            return self.phys_state_name
        return PHYS_STATES.get(self.phys_state_id)


@dataclass(frozen=True, slots=True)
class CardView:
    """One RDMA device of a host, for the rules on its PCIe layout (rules/pciepath.judge_host)."""

    name: str
    numa_node: int | None = None  # None: unknown (the kernel's -1)
    infiniband: bool = True  # a port of it is not Ethernet (RoCE cards are not IB cards)
    need_gbps: float | None = None  # what its ports run at or should, summed (rules/pcie.port_needs); None: none
    path: tuple[HopView, ...] | None = None  # as PcieView.path
    # Below the bridges of its path (Device.pcie_path's neighbours): (address or name, `via` hop address).
    gpus_below: tuple[tuple[str, str], ...] = ()
    rdma_below: tuple[tuple[str, str], ...] = ()
    shared_warning: bool = False  # a link policy raises a shared hop above it to a warning
    own_gbps: float | None = None  # usable Gb/s of its own PCIe link as trained (collectors.pcie.usable_gbps)


@dataclass(frozen=True, slots=True)
class GpuView:
    """One GPU of a host (Node.gpus): its link, where it sits, and how it reaches each RDMA device."""

    address: str
    numa_node: int | None = None
    local_cpulist: str | None = None
    current_gts: float | None = None
    current_width: int | None = None
    nics: tuple[tuple[str, str], ...] = ()  # (RDMA device, PIX | PXB | PHB | NODE | SYS)


@dataclass(frozen=True, slots=True)
class HostView:
    node: str
    cards: tuple[CardView, ...] = ()
    gpus: tuple[GpuView, ...] | None = None  # None: its agent sends no PCIe tree (schema 1)
