"""What only the fabric view can say: a switch the sweeps no longer reach, and cabling against the
expected topology. Pure: ends and links in, findings out (in fabricweb.health.rules.findings' terms).

Switch ports' own findings (down, degraded below what both ends support, symbol errors, flapping,
congestion, discards) come from the same rules as a host's (fabricweb.health.rules).
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.facts import SWITCH_DEVICE
from fabricweb.health.rules.findings import Finding, Kind, Severity, node_key, port_key

from .links import End, EndKey, FabricView


@dataclass(frozen=True, slots=True)
class Neighbour:
    """What the last topology said was cabled to a switch, and what this sweep read of that port."""

    label: str  # the neighbour's end: `spine01 port 5`
    end: End | None  # None: not reached by this sweep either


def unreachable(name: str, guid: str, neighbours: list[Neighbour]) -> Finding:
    """A switch the last full sweep did not reach: mute (a link to it is up), or cut off (all down)."""
    up = [n for n in neighbours if n.end is not None and n.end.link_up]
    read = [n for n in neighbours if n.end is not None]
    details: dict[str, object] = {"switch": name, "guid": guid, "links": len(neighbours)}
    if up:
        first = up[0]
        others = f" (and {len(up) - 1} more links up)" if len(up) > 1 else ""
        text = (
            f"{name}: switch not answering management datagrams: its link to {first.label} is up "
            f"({first.end.state_text}){others} but it did not answer; its ports' state and counters are unknown "
            "until it does (check its management agent and firmware)"
        )
        details.update(reason="mute", links_up=len(up))
    elif read:
        shown = ", ".join(n.label for n in read[:4]) + (", ..." if len(read) > 4 else "")
        unread = len(neighbours) - len(read)
        beyond = f", and {unread} more ports cabled to it are not reached at all" if unread else ""
        text = (
            f"{name}: switch unreachable: all {len(read)} links to it are down ({shown}){beyond}: "
            "it lost power, or every cable at once"
        )
        details.update(reason="links down", links_down=len(read))
    else:
        text = f"{name}: switch unreachable: not reached by the fabric sweep, nor the ports facing it"
        details.update(reason="not reached")
    return Finding(Kind.UNREACHABLE, Severity.CRITICAL, node_key(Kind.UNREACHABLE, name), text, details)


@dataclass(frozen=True, slots=True)
class ExpectedEnd:
    text: str  # as the topology file names it: `leaf01 port 5`, `cn005 mlx5_0/1`
    key: EndKey | None  # where the fabric has it; None: not known to this sweep
    switch: str | None  # the switch's inventory name, for a switch port


def cabling(
    expected: list[tuple[ExpectedEnd, ExpectedEnd]], view: FabricView, last_peer: dict[EndKey, EndKey]
) -> list[tuple[str, Finding]]:
    """(switch name, finding) for every expected link missing or on the wrong port, and every link on an
    expected switch that the expected topology does not have. A link that is only down is not a cabling
    problem: its last known cable was the expected one, and the down finding says the rest."""
    out: list[tuple[str, Finding]] = []
    explained: set[EndKey] = set()
    wanted: set[frozenset[EndKey]] = set()
    switches: set[str] = set()
    for a, b in expected:
        anchor = a if a.switch is not None else b
        if anchor.switch is None or anchor.key is None:
            continue  # a switch the fabric has not seen: nothing to judge yet
        switches.update(e.switch for e in (a, b) if e.switch is not None)
        if a.key is not None and b.key is not None:
            wanted.add(frozenset((a.key, b.key)))
        actual_a = view.peer_of.get(a.key) if a.key else None
        actual_b = view.peer_of.get(b.key) if b.key else None
        if actual_a is not None and b.key is not None and actual_a.key == b.key:
            continue
        here = view.ends.get(anchor.key)
        where = here.label if here is not None else anchor.text
        if actual_a is None and actual_b is None:
            if a.key is not None and b.key is not None and last_peer.get(a.key) == b.key:
                continue
            text = f"{where}: expected a cable to {_other(anchor, a, b).text}, and neither end has a link"
            out.append((anchor.switch, _finding(anchor, text, "missing", a, b)))
            continue
        parts = []
        if actual_b is not None and (a.key is None or actual_b.key != a.key):
            parts.append(f"{b.text} is cabled to {actual_b.label}")
        if actual_a is not None and actual_a.key != b.key:
            parts.append(f"{a.text} is cabled to {actual_a.label}")
        elif actual_a is None:
            parts.append(f"{a.text} has no link")
        explained.update(k for k in (a.key, b.key) if k is not None)
        explained.update(e.key for e in (actual_a, actual_b) if e is not None)
        text = f"{where}: cabled wrong: expected {a.text} ↔ {b.text}; {'; '.join(parts)}"
        out.append((anchor.switch, _finding(anchor, text, "wrong port", a, b)))
    for (ka, kb), link in view.links.items():
        if frozenset((ka, kb)) in wanted or ka in explained or kb in explained:
            continue
        ends = [e for e in (link.a, link.b) if e.switch in switches]
        if not ends:
            continue
        anchor_end = min(ends, key=lambda e: (e.switch, e.key[1]))
        other = link.b if anchor_end is link.a else link.a
        text = f"{anchor_end.label} ↔ {other.label}: a link the expected cabling does not have"
        key = port_key(Kind.CABLING, anchor_end.switch, SWITCH_DEVICE, anchor_end.key[1])
        details = {"problem": "unexpected", "actual": [anchor_end.label, other.label]}
        out.append((anchor_end.switch, Finding(Kind.CABLING, Severity.WARNING, key, text, details)))
    return out


def _other(anchor: ExpectedEnd, a: ExpectedEnd, b: ExpectedEnd) -> ExpectedEnd:
    return b if anchor is a else a


def _finding(anchor: ExpectedEnd, text: str, problem: str, a: ExpectedEnd, b: ExpectedEnd) -> Finding:
    key = port_key(Kind.CABLING, anchor.switch, SWITCH_DEVICE, anchor.key[1])
    return Finding(Kind.CABLING, Severity.WARNING, key, text, {"problem": problem, "expected": [a.text, b.text]})
