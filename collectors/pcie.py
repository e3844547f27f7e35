"""The HCA's PCIe link: generation names, usable bandwidth, and whether it caps the port.

A card in a slot that trained at x8, or at a lower generation, silently caps the
InfiniBand link (shared/docs/infiniband.md §2b).
"""

from __future__ import annotations

from .link import Rate, format_gbps
from .model import PciLink

# GT/s per lane -> (generation, usable Gb/s per lane after line encoding).
_GENERATIONS = {
    2.5: (1, 2.0),
    5.0: (2, 4.0),
    8.0: (3, 8.0 * 128 / 130),
    16.0: (4, 16.0 * 128 / 130),
    32.0: (5, 32.0 * 128 / 130),
    64.0: (6, 63.0),
}


def generation(gts: float | None) -> int | None:
    entry = _GENERATIONS.get(gts) if gts is not None else None
    return entry[0] if entry else None


def usable_gbps(gts: float | None, width: int | None) -> float | None:
    """Usable Gb/s of a PCIe link before protocol overhead, or None if unknown."""
    entry = _GENERATIONS.get(gts) if gts is not None else None
    if entry is None or not width:
        return None
    return entry[1] * width


def describe(gts: float | None, width: int | None) -> str:
    """`Gen4 x16`, falling back to `8.0 GT/s x16` for speeds outside the table."""
    gen = generation(gts)
    speed = f"Gen{gen}" if gen else (f"{gts:g} GT/s" if gts else "unknown speed")
    return f"{speed} x{width}" if width else speed


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
