"""A device's PCIe link: trained below what the card supports, or too slow for its port."""

from __future__ import annotations

from collectors import pcie
from collectors.link import Rate

from .common import INFO, WARNING, ethernet, expect_up, positive
from .expectation import Expectation, usable
from .findings import Finding, Kind, device_key
from .view import PortView


def judge_pcie(view: PortView, exp: Expectation) -> Finding | None:
    p = view.pcie
    if p is None:
        return None
    now_bw = pcie.usable_gbps(p.current_gts, p.current_width)
    if now_bw is None:
        return None
    now_text = pcie.describe(p.current_gts, p.current_width)
    max_gen, now_gen = pcie.generation(p.max_gts), pcie.generation(p.current_gts)
    slow_gen = max_gen is not None and now_gen is not None and now_gen < max_gen
    narrow = positive(p.max_width) and positive(p.current_width) and p.current_width < p.max_width
    trained_low = slow_gen or narrow
    port_rate = port_needs(view, exp)
    bottleneck = port_rate is not None and now_bw < port_rate.gbps

    if not (trained_low or bottleneck):
        return None
    parts = []
    if bottleneck:
        parts.append(f"PCIe {now_text} (~{round(now_bw):,} Gb/s) limits a {port_rate.describe(ethernet(view))} port")
    if trained_low:
        max_text = pcie.describe(p.max_gts if max_gen else p.current_gts, p.max_width if narrow else p.current_width)
        parts.append(f"PCIe trained at {now_text}, the card supports {max_text}")
        advice = "reseat the card and check the slot"
    else:
        advice = "the card itself is at its PCIe maximum"
    # Fixable (or maybe fixable) and costing bandwidth: warning. Either alone is worth knowing, not paging.
    max_known = max_gen is not None and positive(p.max_width)
    severity = WARNING if bottleneck and (trained_low or not max_known) else INFO
    return Finding(
        Kind.PCIE,
        severity,
        device_key(Kind.PCIE, view.node, view.device),
        f"{view.node} {view.device}: {'; '.join(parts)} ({advice})",
        {
            "pcie": now_text,
            "pcie_gbps": round(now_bw, 1),
            "port_gbps": port_rate.gbps if port_rate else None,
            "trained_low": trained_low,
            "bottleneck": bottleneck,
        },
    )


def port_needs(view: PortView, exp: Expectation) -> Rate | None:
    """The fastest link this port runs at or should: what its PCIe link must carry."""
    return link_needs(view.is_active, view.link, expect_up(view), exp.link)


def link_needs(active: bool, link: Rate | None, should_be_up: bool, expected: Rate | None) -> Rate | None:
    """port_needs from its parts: the link while ACTIVE, and the expected one while it is or should be up."""
    candidates = []
    if active and usable(link) is not None:
        candidates.append(usable(link))
    if should_be_up or active:
        expected = usable(expected)
        if expected is not None:
            candidates.append(expected)
    return max(candidates, key=lambda r: r.gbps) if candidates else None
