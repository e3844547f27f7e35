"""The HCA's PCIe link: generation names, usable bandwidth, and whether it caps the port.

A card in a slot that trained at x8, or at a lower generation, silently caps the
InfiniBand link (shared/docs/infiniband.md §2b).
"""

from __future__ import annotations

import math

from .link import Rate, format_gbps
from .model import PciLink

# GT/s per lane -> (generation, usable Gb/s per lane after line encoding, before protocol
# overhead). Gen1/2 use 8b/10b, Gen3-5 128b/130b; Gen6 is the doc's ~63 Gb/s.
GENERATIONS: dict[float, tuple[int, float]] = {
    2.5: (1, 2.0),
    5.0: (2, 4.0),
    8.0: (3, 8.0 * 128 / 130),
    16.0: (4, 16.0 * 128 / 130),
    32.0: (5, 32.0 * 128 / 130),
    64.0: (6, 63.0),
}


def _entry(gts: float | None) -> tuple[int, float] | None:
    if not isinstance(gts, int | float) or not math.isfinite(gts):
        return None
    # Match the nearest known speed: values may come through JSON or arithmetic.
    for known, entry in GENERATIONS.items():
        if abs(known - gts) < 0.01:
            return entry
    return None


def generation(gts: float | None) -> int | None:
    entry = _entry(gts)
    return entry[0] if entry else None


def usable_gbps(gts: float | None, width: int | None) -> float | None:
    """Usable Gb/s of a PCIe link before protocol overhead, or None if unknown."""
    entry = _entry(gts)
    if entry is None or not width or width <= 0:
        return None
    return entry[1] * width


def describe(gts: float | None, width: int | None) -> str:
    """`Gen4 x16`, as operators (and lspci's LnkSta) name a PCIe link."""
    gen = generation(gts)
    speed = f"Gen{gen}" if gen else (f"{gts:g} GT/s" if _entry(gts) is None and gts else "unknown speed")
    return f"{speed} x{width}" if width else f"{speed} unknown width"


def findings(pci: PciLink | None, port_rates: list[Rate]) -> list[str]:
    """Operator sentences for a PCIe link trained low or too slow for the fastest port on it."""
    if pci is None:
        return []
    out = []
    cur, top = (pci.current_gts, pci.current_width), (pci.max_gts, pci.max_width)
    if None not in cur and None not in top and (cur[0] < top[0] or cur[1] < top[1]):
        out.append(f"PCIe trained at {describe(*cur)}, the slot and card support {describe(*top)}")
    usable = usable_gbps(*cur)
    fastest = max((r for r in port_rates if r.lanes), key=lambda r: r.gbps, default=None)
    if usable is not None and fastest is not None and usable < fastest.gbps:
        out.append(f"PCIe {describe(*cur)} (~{format_gbps(round(usable))} Gb/s) limits a {fastest.describe()} port")
    return out
