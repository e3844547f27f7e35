"""Degradation a host can see on its own, with no history and no fabric view.

The central side judges against operator policy, port history and the fabric;
this is what `snapshot --format text` can already tell an engineer at the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import pcie
from .link import better_link, judge_link
from .model import Snapshot


@dataclass(frozen=True, slots=True)
class LocalFinding:
    device: str
    port: int | None  # None: the whole device (its PCIe link)
    message: str


def local_findings(snap: Snapshot) -> list[LocalFinding]:
    out: list[LocalFinding] = []
    # The best link any ACTIVE InfiniBand port of the same HCA model holds on this host.
    best_by_model: dict[str, object] = {}
    for dev in snap.devices:
        for p in dev.ports:
            if dev.hca_type and p.is_up and p.link_layer == "InfiniBand":
                best_by_model[dev.hca_type] = better_link(best_by_model.get(dev.hca_type), p.rate)

    for dev in snap.devices:
        rates = [p.rate for p in dev.ports if p.is_up and p.rate is not None]
        out.extend(LocalFinding(dev.name, None, m) for m in pcie.findings(dev.pci, rates))
        out.extend(LocalFinding(dev.name, None, m) for m in pcie.path_findings(dev.pcie_path, dev.pci, rates))
        for p in dev.ports:
            phys = p.phys_state.id if p.phys_state else None
            if phys == 5 and p.state is not None and p.state.id in (2, 3):
                out.append(
                    LocalFinding(
                        dev.name,
                        p.number,
                        f"physically LinkUp but {p.state.name}: the subnet manager is not answering",
                    )
                )
            best = best_by_model.get(dev.hca_type) if dev.hca_type else None
            if p.is_up and p.rate is not None and best is not None and p.link_layer == "InfiniBand":
                finding = judge_link(p.rate, best)
                if finding:
                    out.append(
                        LocalFinding(
                            dev.name, p.number, f"{finding.message} (another {dev.hca_type} port here runs it)"
                        )
                    )
            if p.capped:
                out.append(
                    LocalFinding(
                        dev.name,
                        p.number,
                        f"counters stopped at their maximum ({', '.join(p.capped)}): rate unknown until "
                        "reset (perfquery -R) or read as 64-bit extended counters",
                    )
                )
    return out
