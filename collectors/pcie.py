"""The HCA's PCIe link: generation names, usable bandwidth, and whether it caps the port.

A card in a slot that trained at x8, or at a lower generation, silently caps the
InfiniBand link (docs/infiniband.md §2b).
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


UPLINK = "PCIe switch uplink"


def hop_words(kind: str | None, right_below_root: bool) -> str:
    """A bridge of a path (pcimodel.Hop.kind) in an operator's words: the switch port right below the root port
    is the switch's upstream port, whose link is the switch's uplink."""
    if kind == "root port":
        return "root port"
    if kind == "switch port":
        return UPLINK if right_below_root else "PCIe switch port"
    return "PCIe bridge"


def limits(words: str, address: str, gts: float | None, width: int | None, usable: float, port: str) -> str:
    """How a hop narrower than a port is said, by the health rule and the text output alike."""
    return f"{words} {address} trained {describe(gts, width)} (~{round(usable):,} Gb/s), limits a {port} port"


def path_findings(path, pci: PciLink | None, port_rates: list[Rate]) -> list[str]:
    """The narrowest bridge above a card (a pcimodel.PciePath) when it carries less than the fastest port on the
    card and less than the card's own link (which `findings` judges), in the health rule's words."""
    fastest = max((r for r in port_rates if r.lanes), key=lambda r: r.gbps, default=None)
    if path is None or fastest is None:
        return []
    hops = path.hops
    rooted = bool(hops) and hops[-1].kind == "root port"
    own = usable_gbps(pci.current_gts, pci.current_width) if pci is not None else None
    first = 2 if own is not None else 1  # the bridge right above the function carries the card's own link
    judged = [
        (i, bw) for i in range(first, len(hops)) if (bw := usable_gbps(hops[i].current_gts, hops[i].current_width))
    ]
    if not judged:
        return []
    i, narrow = min(judged, key=lambda ib: ib[1])  # the nearest of equals
    if narrow >= fastest.gbps or (own is not None and narrow >= own):
        return []
    hop = hops[i]
    words = hop_words(hop.kind, rooted and i == len(hops) - 2)
    return [limits(words, hop.address, hop.current_gts, hop.current_width, narrow, fastest.describe())]


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
