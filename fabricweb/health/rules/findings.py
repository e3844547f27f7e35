"""What a health rule says about a port, a device or a node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from collectors.facts import SWITCH_DEVICE


class Severity(StrEnum):
    # critical: page someone; warning: look today; info: on the record, never an alarm.
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


class Kind(StrEnum):
    DOWN = "down"
    DEGRADED = "degraded"
    NO_SM = "no_subnet_manager"
    SYMBOL_ERRORS = "symbol_errors"
    FLAPPING = "flapping"
    RCV_ERRORS = "rcv_errors"
    REMOTE_PHYSICAL_ERRORS = "remote_physical_errors"
    XMIT_DISCARDS = "xmit_discards"
    LINK_INTEGRITY = "link_integrity_errors"
    BUFFER_OVERRUN = "buffer_overrun_errors"
    CONGESTION = "congestion"
    CAPPED = "capped_counters"
    PCIE = "pcie"
    # Lossless Ethernet on a RoCE port (rules/lossless.py).
    PAUSE_RECEIVED = "pfc_pause_received"  # the switch pauses the port: congestion in the network
    PAUSE_SENT = "pfc_pause_sent"  # the port pauses the switch: the host or its PCIe does not keep up
    PAUSE_STORM = "pause_storm"  # the NIC's pause-storm watchdog fired
    CNP_STORM = "cnp_storm"  # ECN marks and congestion notifications far past a busy port's
    ROCE_LOSS = "roce_packet_loss"  # out-of-sequence, NAK sequence errors, ACK timeouts: loss on a lossless path
    RX_DISCARDS = "rx_discards"  # frames dropped on arrival for lack of receive buffer
    # The PCIe path above a card and the host's layout (rules/pciepath.py).
    PCIE_PATH = "pcie_path"  # a hop above the card trained low or too narrow for its port
    PCIE_SHARED = "pcie_shared"  # GPUs below a hop above a card that cannot carry the card (narrow or trained low)
    GPU_AFFINITY = "gpu_affinity"  # a GPU whose nearest IB card is across the CPU sockets
    PCIE_NUMA = "pcie_numa"  # a card's NUMA node unknown on a multi-socket host
    STALE = "stale"
    CLOCK_SKEW = "clock_skew"
    VANISHED = "vanished"
    UNREACHABLE = "unreachable"  # a switch the fabric sweeps no longer reach
    CABLING = "cabling"  # a link against the expected topology: missing, on the wrong port, unexpected
    DRAIN = "drain"  # a node fabricweb drained (or would drain) in the scheduler, and why (fabricweb.jobs.drain)
    GUID_CONFLICT = "guid_conflict"  # a port GUID several hosts claim (fabricweb.fabric.viewfindings)
    NAME_CONFLICT = "name_conflict"  # a switch describing itself by a host's name (fabricweb.fabric.hostnames)


# One fault, one event: a finding of the first kind carries on the fault an open event of the others was opened
# for, on the same target, which is resolved as it appears. A link flapping (a problem, not the one bounce that
# is advice) is the fault its port's DOWN event was opened for at the first drop.
CARRIES_ON = {Kind.FLAPPING: (Kind.DOWN,)}


def retarget(key: str, kind: Kind) -> str:
    """The key of `kind` on `key`'s target: down:cn042/mlx5_0/1 for flapping:cn042/mlx5_0/1."""
    return f"{kind}:{key.partition(':')[2]}"


# Kinds whose events another judge opens and resolves (the drain pass, the fabric view): a host's own judgement
# of its snapshot never counts them clean, though they are about the host or its ports.
JUDGED_ELSEWHERE = frozenset({Kind.DRAIN, Kind.GUID_CONFLICT, Kind.NAME_CONFLICT})


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem, in an operator's words.

    `key` names the thing and the kind of problem, never the poll: the same
    problem seen again has the same key, so it stays one event.
    `details` holds JSON-ready values only (str, int, float, bool, None, lists, dicts).
    """

    kind: Kind
    severity: Severity
    key: str
    message: str
    details: Mapping[str, object] = field(default_factory=dict)


def port_label(node: str, device: str, port: int) -> str:
    """`cn042 mlx5_0/1`, as operators write a port; a switch's `leaf07 port 12`, as iblinkinfo does."""
    if device == SWITCH_DEVICE:
        return f"{node} port {port}"
    return f"{node} {device}/{port}"


def link_label(node: str, device: str, port: int, far_end: str | None) -> str:
    """`cn042 mlx5_0/1 ↔ leaf07 port 12`: the port, and the far end of its cable when the fabric knows it."""
    label = port_label(node, device, port)
    return f"{label} ↔ {far_end}" if far_end else label


def port_key(kind: Kind, node: str, device: str, port: int) -> str:
    return f"{kind}:{port_target(node, device, port)}"


def device_key(kind: Kind, node: str, device: str) -> str:
    return f"{kind}:{device_target(node, device)}"


def port_target(node: str, device: str, port: int) -> str:
    """What a port's keys are about: `cn042/mlx5_0/1`."""
    return f"{node}/{device}/{port}"


def device_target(node: str, device: str) -> str:
    return f"{node}/{device}"


def node_key(kind: Kind, node: str) -> str:
    return f"{kind}:{node}"


def pci_target(node: str, address: str) -> str:
    """What a key about a PCI function of the node is (a GPU, a switch uplink): `cn042/0000:40:01.1`."""
    return f"{node}/{address}"


def pci_key(kind: Kind, node: str, address: str) -> str:
    return f"{kind}:{pci_target(node, address)}"


def merge_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per key, the most severe (first seen on a tie), in first-seen order.

    Device- and node-level findings arrive once per port of that device or node.
    """
    best: dict[str, Finding] = {}
    for f in findings:
        seen = best.get(f.key)
        if seen is None or f.severity.rank > seen.severity.rank:
            best[f.key] = f
    return list(best.values())
