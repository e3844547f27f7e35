"""The PCIe path above an HCA, and the host's PCIe layout. Pure: views in, findings out.

- `judge_path` (per port, one finding per device, Kind.PCIE_PATH): the narrowest bridge above the card
  limits its port, or a bridge trained below what it and its link partner support. The bridge right
  above the function carries the card's own link, which judge_pcie (Kind.PCIE) judges: while that link
  is known, it is left to it, and so is a path no narrower than the card's own link.
- `judge_host` (per node snapshot): PCIE_SHARED per hop shared with GPUs, GPU_AFFINITY per GPU and
  PCIE_NUMA per card (docs/health.md, "The PCIe path").
"""

from __future__ import annotations

from collections.abc import Iterable

from collectors import pcie
from collectors.link import format_gbps

from .common import INFO, WARNING, ethernet, positive
from .expectation import Expectation
from .findings import Finding, Kind, device_key, pci_key
from .pcie import port_needs
from .view import CardView, GpuView, HopView, HostView, PortView

SWITCH_PORT, ROOT_PORT = "switch port", "root port"  # Device.pcie_path hop kinds
RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")  # collectors.pcitopo's, nearest first
SYS = "SYS"
_LINK = ("current_gts", "current_width", "max_gts", "max_width")
_KEY_FIELDS = ("address", "kind", *_LINK, "numa_node", "local_cpulist")


# --- Device.pcie_path as views --------------------------------------------------------


def hops_of(path: object, known: bool) -> tuple[HopView, ...] | None:
    """The bridges of a stored pcie_path, nearest first; () when there are none and `known` (its agent
    sends PCIe trees: no path means no bridge), None when nothing is known."""
    raw = path.get("hops") if isinstance(path, dict) else None
    if not isinstance(raw, list):
        return () if known else None
    hops = [h for h in raw if isinstance(h, dict) and isinstance(h.get("address"), str)]
    rooted = bool(hops) and hops[-1].get("kind") == ROOT_PORT
    out = []
    for i, h in enumerate(hops):
        words = pcie.hop_words(h.get("kind"), rooted and i == len(hops) - 2)
        link = [_number(h.get(k)) for k in _LINK]
        numa = _number(h.get("numa_node"))
        cpus = h.get("local_cpulist")
        out.append(HopView(h["address"], words, *link, numa, cpus if isinstance(cpus, str) else None))
    return tuple(out)


def path_key(path: object, known: bool) -> tuple | None:
    """What hops_of depends on, comparable with == (the engine's memo of quiet ports): a path edited in place
    still compares different."""
    raw = path.get("hops") if isinstance(path, dict) else None
    if not isinstance(raw, list):
        return (known,)
    return tuple(tuple(map(h.get, _KEY_FIELDS)) if isinstance(h, dict) else None for h in raw)


def neighbours_of(path: object) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The GPUs (by address) and other RDMA devices (by name) below a stored pcie_path's bridges, each with
    the `via` hop above it."""
    raw = path.get("neighbours") if isinstance(path, dict) else None
    found = [n for n in raw or () if isinstance(n, dict) and isinstance(n.get("via"), str)]
    gpus = tuple(
        (n["address"], n["via"]) for n in found if n.get("kind") == "gpu" and isinstance(n.get("address"), str)
    )
    rdma = tuple((str(n.get("name") or n.get("address")), n["via"]) for n in found if n.get("kind") == "rdma")
    return gpus, rdma


def gpu_view(g: dict) -> GpuView:
    """One entry of a stored Node.gpus."""
    nics = g.get("nics")
    pairs = tuple((str(k), v) for k, v in nics.items() if isinstance(v, str)) if isinstance(nics, dict) else ()
    cpus = g.get("local_cpulist")
    return GpuView(
        str(g.get("address")),
        known_numa(g.get("numa_node")),
        cpus if isinstance(cpus, str) else None,
        _number(g.get("current_gts")),
        _number(g.get("current_width")),
        pairs,
    )


def _number(x: object) -> float | int | None:
    return x if positive(x) or (type(x) is int and x == 0) else None


# --- the narrowest hop ------------------------------------------------------------------


def judge_path(view: PortView, exp: Expectation) -> Finding | None:
    p = view.pcie
    if p is None or not p.path:
        return None
    own = pcie.usable_gbps(p.current_gts, p.current_width)
    card = HopView("", "the card", p.current_gts, p.current_width, p.max_gts, p.max_width)
    links = (card, *p.path)  # each with its neighbours: a link's two ends report the same link
    first = 2 if own is not None else 1  # the bridge right above the function carries the card's own link
    judged = [(i, bw) for i in range(first, len(links)) if (bw := _gbps(links[i])) is not None]
    if not judged:
        return None
    narrow_i, narrow_bw = min(judged, key=lambda ib: ib[1])  # the nearest of equals
    narrow = links[narrow_i]
    port_rate = port_needs(view, exp)
    # No narrower than the card's own link: judge_pcie says so, once.
    bottleneck = port_rate is not None and narrow_bw < port_rate.gbps and (own is None or narrow_bw < own)
    low = [i for i, _ in judged if _trained_low(links, i)]
    if not (bottleneck or low):
        return None
    low_i = narrow_i if narrow_i in low else (low[0] if low else None)
    named = narrow if bottleneck else links[low_i]
    now_text = pcie.describe(named.current_gts, named.current_width)
    parts = []
    if bottleneck:
        port = port_rate.describe(ethernet(view))
        parts.append(pcie.limits(named.words, named.address, named.current_gts, named.current_width, narrow_bw, port))
        if low_i == narrow_i:
            parts[-1] += f"; the link supports {_supported(narrow)}"
    if low_i is not None and not (bottleneck and low_i == narrow_i):
        hop = links[low_i]
        hop_now = pcie.describe(hop.current_gts, hop.current_width)
        parts.append(f"{hop.words} {hop.address} trained at {hop_now}, it supports {_supported(hop)}")
    if low_i is not None:
        advice = "reseat the switch or riser and check the slot's link settings in the BIOS"
    else:
        advice = "the path is at its PCIe maximum: a faster slot would carry the port"
    max_known = pcie.generation(narrow.max_gts) is not None and positive(narrow.max_width)
    severity = WARNING if bottleneck and (low_i == narrow_i or not max_known) else INFO
    return Finding(
        Kind.PCIE_PATH,
        severity,
        device_key(Kind.PCIE_PATH, view.node, view.device),
        f"{view.node} {view.device}: {'; '.join(parts)} ({advice})",
        {
            "hop": named.address,
            "hop_kind": named.words,
            "pcie": now_text,
            "pcie_gbps": round(_gbps(named) or 0.0, 1),
            "port_gbps": port_rate.gbps if port_rate else None,
            "trained_low": low_i is not None,
            "bottleneck": bottleneck,
        },
    )


def _gbps(hop: HopView) -> float | None:
    return pcie.usable_gbps(hop.current_gts, hop.current_width)


def _below_max(hop: HopView) -> bool:
    now_gen, max_gen = pcie.generation(hop.current_gts), pcie.generation(hop.max_gts)
    slow = now_gen is not None and max_gen is not None and now_gen < max_gen
    narrow = positive(hop.current_width) and positive(hop.max_width) and hop.current_width < hop.max_width
    return slow or narrow


def _trained_low(links: tuple[HopView, ...], i: int) -> bool:
    """Below what it supports, and its link partner (a neighbour reporting the same link) is not at its own
    maximum: a root port of x16 above a switch of x8 runs at the best both ends can."""
    hop = links[i]
    if not _below_max(hop):
        return False
    for j in (i - 1, i + 1):
        if 0 <= j < len(links):
            other = links[j]
            same = (other.current_gts, other.current_width) == (hop.current_gts, hop.current_width)
            known = pcie.generation(other.max_gts) is not None and positive(other.max_width)
            if same and known and not _below_max(other):
                return False
    return True


def _supported(hop: HopView) -> str:
    gts = hop.max_gts if pcie.generation(hop.max_gts) is not None else hop.current_gts
    width = hop.max_width if positive(hop.max_width) else hop.current_width
    return pcie.describe(gts, width)


# --- the host's layout ------------------------------------------------------------------


def judge_host(host: HostView) -> tuple[list[Finding], set[str]]:
    """PCIE_SHARED, GPU_AFFINITY and PCIE_NUMA findings of one host's snapshot, and the keys of those it
    could not judge. The first two need its GPUs (schema 2); `host.gpus` None judges neither."""
    findings: list[Finding] = []
    unknown: set[str] = set()
    if host.gpus is not None:
        findings.extend(_shared(host, unknown))
        findings.extend(_affinity(host))
    findings.extend(_numa_unknown(host))
    return findings, unknown


def _shared(host: HostView, unknown: set[str]) -> Iterable[Finding]:
    """GPUs below a hop that a card's own traffic must cross, where that hop cannot carry the card: narrower than
    what the card can move, or trained below what it supports (docs/health.md, "Shared hops"). Traffic between a
    GPU and a card below one switch goes peer to peer and turns inside that switch (GPUDirect RDMA); what crosses
    the hops above it is each device's traffic to host memory. So GPUs below a hop that carries the card's port
    are no finding: an HGX server, two GPUs and a 400 Gb/s card below each Gen5 x16 uplink, opens nothing."""
    found: dict[str, tuple[HopView, dict[str, CardView], set[str], set[str], bool]] = {}
    for card in host.cards:
        hit = _card_shared(host.node, card, unknown)
        if hit is None:
            continue
        hop, gpus, narrow, low = hit
        _, cards, all_gpus, narrower, was_low = found.setdefault(hop.address, (hop, {}, set(), set(), False))
        cards[card.name] = card
        all_gpus |= gpus
        if narrow:
            narrower.add(card.name)
        found[hop.address] = (hop, cards, all_gpus, narrower, was_low or low)
    for address, (hop, cards, gpus, narrower, low) in found.items():
        names = sorted(cards, key=_natural)
        carries = _gbps(hop)
        link = pcie.describe(hop.current_gts, hop.current_width)
        who = ", ".join(
            f"{n} ({format_gbps(round(cards[n].need_gbps))} Gb/s)" if cards[n].need_gbps else n for n in names
        )
        why = []
        if narrower:
            limited = sorted(narrower, key=_natural)
            why.append(f"narrower than the {'port' if len(limited) == 1 else 'ports'} of {', '.join(limited)}")
        if low:
            why.append(f"below the {_supported(hop)} it supports")
        gpu_s, card_s = ("GPUs'" if len(gpus) > 1 else "GPU's"), ("cards'" if len(names) > 1 else "card's")
        text = (
            f"{host.node}: {who} and GPU {', '.join(sorted(gpus))} share a {hop.words} {address} trained {link} "
            f"(~{round(carries):,} Gb/s), {' and '.join(why)}: the {gpu_s} traffic to host memory crosses it beside "
            f"the {card_s}; their traffic to each other turns below it (GPUDirect RDMA)"
        )
        severity = WARNING if any(c.shared_warning for c in cards.values()) else INFO
        details = {
            "hop": address,
            "hop_kind": hop.words,
            "pcie": link,
            "pcie_gbps": round(carries, 1),
            "devices": names,
            "gpus": sorted(gpus),
            "port_gbps": round(sum(cards[n].need_gbps or 0.0 for n in names), 1),
            "narrower_than_port": bool(narrower),
            "trained_low": low,
        }
        yield Finding(Kind.PCIE_SHARED, severity, pci_key(Kind.PCIE_SHARED, host.node, address), text, details)


def _card_shared(node: str, card: CardView, unknown: set[str]) -> tuple[HopView, set[str], bool, bool] | None:
    """The hop above `card` that GPUs share and that cannot carry the card (the narrowest, the nearest of equals),
    with the GPUs below it and whether it is narrow, trained low; None when there is none. A shared hop whose link
    is unknown holds its event."""
    path = card.path or ()
    index = {h.address: i for i, h in enumerate(path)}
    # What the card can move: its ports, within its own link (a slower own link is the pcie rule's to say).
    can_move = card.need_gbps
    if can_move and card.own_gbps:
        can_move = min(can_move, card.own_gbps)
    worst = None
    # path[0] carries the card's own link, which no GPU shares; a GPU shares every hop from its `via` up.
    for i in range(1, len(path)):
        gpus = {a for a, via in card.gpus_below if index.get(via, len(path)) <= i}
        if not gpus:
            continue
        hop, carries = path[i], _gbps(path[i])
        low = _trained_low(path, i)
        if carries is None:
            unknown.add(pci_key(Kind.PCIE_SHARED, node, hop.address))
            continue
        narrow = can_move is not None and carries < can_move
        if (narrow or low) and (worst is None or carries < worst[0]):
            worst = (carries, (hop, gpus, narrow, low))
    return worst[1] if worst else None


def _affinity(host: HostView) -> Iterable[Finding]:
    """A GPU whose nearest IB card is across the CPU sockets, on a host with two IB cards or more (one
    could sit on the GPU's socket). A GPU whose NUMA node is unknown says nothing about sockets."""
    ib = {c.name: c for c in host.cards if c.infiniband}
    if len(ib) < 2:
        return
    for g in host.gpus or ():
        ranked = sorted((RELATIONS.index(r), _natural(n), n) for n, r in g.nics if n in ib and r in RELATIONS)
        if not ranked or RELATIONS[ranked[0][0]] != SYS or known_numa(g.numa_node) is None:
            continue
        if any(c.numa_node == g.numa_node for c in ib.values()):
            continue  # one is on its NUMA node, yet SYS: the relations are older than the cards' NUMA nodes
        nearest = ranked[0][2]
        text = (
            f"{host.node}: GPU {g.address} (NUMA node {g.numa_node}) reaches its nearest IB card {nearest} only "
            f"across the CPU sockets (SYS); no IB card sits on NUMA node {g.numa_node} (GPUDirect RDMA from it "
            "crosses the socket interconnect)"
        )
        details = {"gpu": g.address, "numa_node": g.numa_node, "nearest": nearest, "relation": SYS, "ib_cards": len(ib)}
        yield Finding(Kind.GPU_AFFINITY, INFO, pci_key(Kind.GPU_AFFINITY, host.node, g.address), text, details)


def _numa_unknown(host: HostView) -> Iterable[Finding]:
    """A card whose NUMA node is unknown, on a host that shows two NUMA nodes or two CPU locality lists."""
    nodes: set[int] = set()
    cpus: set[str] = set()
    things: list[object] = [*host.cards, *(host.gpus or ())]
    things.extend(h for c in host.cards for h in c.path or ())
    for thing in things:
        numa = known_numa(thing.numa_node)
        if numa is not None:
            nodes.add(numa)
        cpulist = getattr(thing, "local_cpulist", None)
        if cpulist:
            cpus.add(cpulist)
    if len(nodes) < 2 and len(cpus) < 2:
        return
    seen = f"NUMA nodes {', '.join(map(str, sorted(nodes)))}" if len(nodes) >= 2 else f"{len(cpus)} CPU locality lists"
    for c in host.cards:
        if known_numa(c.numa_node) is not None:
            continue
        text = (
            f"{host.node} {c.name}: NUMA node unknown (-1) on a multi-socket host ({seen}): no CPU or GPU "
            "affinity can be judged for it, and its memory and interrupts may land on the far socket; check "
            "the BIOS/ACPI SRAT (NUMA) settings"
        )
        details = {"numa_nodes": sorted(nodes), "cpu_lists": len(cpus)}
        yield Finding(Kind.PCIE_NUMA, INFO, device_key(Kind.PCIE_NUMA, host.node, c.name), text, details)


def known_numa(x: object) -> int | None:
    """A NUMA node, or None: ingest stores the kernel's -1 (no NUMA node) as null; either is unknown."""
    return x if type(x) is int and x >= 0 else None


def _natural(name: str) -> tuple:
    """mlx5_2 before mlx5_10."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1)
