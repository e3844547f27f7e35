"""The engine's side of the PCIe path rules (rules/pciepath.py): views from the rows ingest holds.

No query: a device's pcie_path and numa_node come with its row, the node's GPUs (Node.gpus) with the node
row ingest attached to the ports. A device's PcieView (its link and the bridges above it) is built once per
snapshot (`pcie_view`, cached by the engine per device); the host's layout is judged once per snapshot
(`judge`), after its ports, from their links and expectations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from collectors import pcie
from collectors.facts import is_ethernet, is_up
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.results import IngestResult

from ..records.context import Policies, rate
from ..records.events import EventBook, Target
from ..rules.expectation import Expectation
from ..rules.findings import Finding, Kind
from ..rules.pcie import link_needs
from ..rules.pciepath import gpu_view, hops_of, judge_host, known_numa, neighbours_of
from ..rules.view import CardView, HostView, PcieView

# Kinds keyed by a PCI function of the node rather than by a device: judged for the whole node at once.
NODE_KINDS = frozenset({Kind.PCIE_SHARED, Kind.GPU_AFFINITY})


def pcie_view(device: Device, cache: dict[int, PcieView]) -> PcieView:
    view = cache.get(id(device))
    if view is None:
        path = hops_of(device.pcie_path, device.node.gpus is not None)
        view = cache[id(device)] = PcieView(
            device.pci_current_gts, device.pci_current_width, device.pci_max_gts, device.pci_max_width, path
        )
    return view


@dataclass(slots=True)
class HostJudgement:
    findings: list[Finding] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)
    targets: dict[str, Target] = field(default_factory=dict)


def judge(
    node: Node,
    result: IngestResult,
    judged: Iterable[tuple[Port, Expectation]],
    policies: Policies,
    cache: dict[int, PcieView],
) -> HostJudgement:
    """The host's PCIe layout at this snapshot: its devices as observed, each port's expectation (`judged`)."""
    out = HostJudgement()
    if node.kind == Node.Kind.SWITCH:
        return out
    expectations = {id(port): exp for port, exp in judged}
    ports: dict[int, list] = {}
    for obs in result.observations:
        ports.setdefault(id(obs.device), []).append(obs)
    devices = [group[0].device for group in ports.values()]
    if not node.gpus and all(known_numa(d.numa_node) is not None for d in devices):
        return out  # no GPU to share or reach, no NUMA node unknown: nothing these rules could say
    cards = tuple(_card(node.name, d, ports[id(d)], expectations, policies, cache) for d in devices)
    gpus = None if node.gpus is None else tuple(gpu_view(g) for g in node.gpus if isinstance(g, dict))
    out.findings, out.unknown = judge_host(HostView(node.name, cards, gpus))
    for f in out.findings:
        if f.kind in NODE_KINDS:
            out.targets[f.key.partition(":")[2]] = (None, None)
    return out


def claim(book: EventBook, node: Node, result: IngestResult, targets: dict[str, Target]) -> None:
    """Add to `targets` the node's open events of NODE_KINDS when this snapshot judged them all: a GPU or
    uplink gone from the host is then clean, not held. Not while a device is missing: its part is unknown."""
    if node.kind != Node.Kind.SWITCH and node.gpus is not None and not result.missing_devices:
        for target in book.targets_of(node.name, NODE_KINDS):
            targets.setdefault(target, (None, None))


def _card(node: str, device: Device, observed: list, expectations: dict, policies: Policies, cache: dict) -> CardView:
    need = 0.0
    infiniband = warning = False
    for obs in observed:
        port, link = obs.port, obs.current
        infiniband |= not is_ethernet(link.link_layer)
        warning |= policies.pcie_shared(node, device.name, port.number) == "warning"
        exp = expectations.get(id(port))
        if exp is None:
            continue
        up = exp.policy.expect_up if exp.policy is not None else port.ever_up
        rated = link_needs(is_up(link.state_id), rate(link.speed, link.lanes), up, exp.link)
        need += rated.gbps if rated is not None else 0.0
    gpus, rdma = neighbours_of(device.pcie_path)
    numa = known_numa(device.numa_node)
    view = pcie_view(device, cache)
    own = pcie.usable_gbps(view.current_gts, view.current_width)
    return CardView(device.name, numa, infiniband, need or None, view.path, gpus, rdma, warning, own)
