"""The port grid as one block of HTML: per port one link with a one-character mark (and a tooltip on
problem ports), nothing else.

Built here rather than in a template loop: at 20,000 ports a template loop alone costs
more than the 300 ms budget. Every name is escaped (host and device names come from nodes).
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from itertools import groupby
from operator import attrgetter

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from .fabric import Cell

# Colour AND a mark, so the grid reads without colour too (legend in the template).
MARKS = {"down": "✕", "degraded": "▼", "erroring": "!"}
WORDS = {"down": "down", "degraded": "degraded", "erroring": "errors"}


def render(cells: list[Cell]) -> SafeString:
    base = reverse("dashboard:port", args=["n", "d", 1]).split("/n/")[0]  # /ports
    parts = []
    for node, group in groupby(cells, key=attrgetter("node")):
        group = list(group)
        name = escape(node)
        stale = group[0].stale
        label = f'<a class="gn" href="/nodes/{name}/">{name}{" (stale)" if stale else ""}</a>'
        parts.append(f'<div class="gnode{" stale" if stale else ""}">{label}')
        for c in group:
            device = _escaped(c.device)
            href = f"{base}/{name}/{device}/{c.port}/"
            if c.health == "up":  # most cells: the link alone (the browser shows where it goes)
                parts.append(f'<a class="c up" href="{href}"></a>')
            else:
                title = f"{name} {device}/{c.port}: {WORDS[c.health]}"
                parts.append(f'<a class="c {c.health}" href="{href}" title="{title}">{MARKS[c.health]}</a>')
        parts.append("</div>")
    return mark_safe("".join(parts))


@lru_cache(maxsize=256)
def _escaped(text: str) -> str:
    # Device names repeat on every node (mlx5_0, mlx5_1): escape each once.
    return escape(text)
