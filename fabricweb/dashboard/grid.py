"""The port grid as one block of HTML: per port one link with a one-character mark (and a tooltip on
problem ports naming their open problems), nothing else. A channel adapter no agent reports is named
"(CA)", read by the fabric collector (marks.ADAPTER_WORDS); a stale host "(stale)".

Built here rather than in a template loop: at 20,000 ports a template loop alone costs
more than the 300 ms budget. Every name is escaped (host and device names come from nodes).
"""

from __future__ import annotations

from functools import lru_cache
from html import escape

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from .marks import ADAPTER_WORDS, HEALTH_WORDS, MARKS, WORDS
from .porthealth import Cell

# An adapter's port is unknown when the sweeps no longer reach it: it has no agent to go stale.
_ADAPTER_CELL_WORDS = {**WORDS, "unknown": "unknown: the fabric collector's sweeps do not reach it"}

# Marked without a tooltip: up (most cells), not connected (often half a leaf: the mark and the legend say it).
PLAIN = frozenset({"up", "not_connected"})


def render(cells: list[Cell]) -> SafeString:
    base = reverse("dashboard:port", args=["n", "d", 1]).split("/n/")[0]  # /ports
    # Each plain cell is one f-string of pieces made once: at 20,000 cells this loop is the grid's cost.
    heads = {h: f'<a class="c {h}" href="' for h in MARKS}
    tails = {h: f'">{MARKS[h]}</a>' for h in PLAIN}
    parts = []
    append = parts.append
    node = None
    words = WORDS
    for c in cells:
        if c.node != node:
            if node is not None:
                append("</div>")
            node, name = c.node, escape(c.node)
            if c.adapter:
                label = f'<a class="gn" href="/nodes/{name}/" title="{name}: {ADAPTER_WORDS}">{name} (CA)</a>'
                append(f'<div class="gnode ca">{label}')
            else:
                label = f'<a class="gn" href="/nodes/{name}/">{name}{" (stale)" if c.stale else ""}</a>'
                append(f'<div class="gnode{" stale" if c.stale else ""}">{label}')
            prefix, words = f"{base}/{name}/", _ADAPTER_CELL_WORDS if c.adapter else WORDS
        device = _escaped(c.device)
        if c.health in PLAIN:  # most cells: the link alone (the browser shows where it goes)
            append(f"{heads[c.health]}{prefix}{device}/{c.port}/{tails[c.health]}")
        else:
            why = f" ({escape(c.why)})" if c.why else ""  # which problems: PCIe, symbol errors...
            title = f"{name} {device}/{c.port}: {words[c.health]}{why}"
            append(f'{heads[c.health]}{prefix}{device}/{c.port}/" title="{title}">{MARKS[c.health]}</a>')
    if node is not None:
        append("</div>")
    return mark_safe("".join(parts))


@lru_cache(maxsize=256)
def _escaped(text: str) -> str:
    # Device names repeat on every node (mlx5_0, mlx5_1): escape each once.
    return escape(text)


# A switch port's unknown: its switch does not answer the sweeps.
SWITCH_WORDS = {**WORDS, "unknown": "unknown: the switch does not answer"}
_TALLY_WORDS = tuple(HEALTH_WORDS.items())


def render_switches(blocks) -> SafeString:
    """/fabric/'s grid: per switch (fabricweb.dashboard.switches.SwitchBlock) a block named after it, linking
    to its page, then one cell per port linking to the port's; problem cells name the far end in a tooltip."""
    parts = []
    for block in blocks:
        name = escape(block.name)
        tally = ", ".join(f"{n} {word}" for key, word in _TALLY_WORDS if (n := block.tally[key]))
        label = f"{name} (unreachable)" if not block.reachable else name
        parts.append(
            f'<div class="gnode sw{"" if block.reachable else " unreachable"}">'
            f'<a class="gn" href="/switches/{name}/" title="{name}: {tally or "no ports"}">{label}</a>'
        )
        base = f"/ports/{name}/switch/"
        for number, health, far_end in block.cells:
            if health in PLAIN:
                parts.append(f'<a class="c {health}" href="{base}{number}/">{MARKS[health]}</a>')
                continue
            far = f" ↔ {escape(far_end)}" if far_end else ""
            parts.append(
                f'<a class="c {health}" href="{base}{number}/" title="{name} port {number}{far}: '
                f'{SWITCH_WORDS[health]}">{MARKS[health]}</a>'
            )
        parts.append("</div>")
    return mark_safe("".join(parts))
