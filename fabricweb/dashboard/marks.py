"""A port's health on the pages, its words and its mark: stated once for the grids, tables, filters and legends.

A port's health is its status (fabricweb.inventory.portfacts.Status, worst first), with one the pages add:
"erroring", a port up at its expected link with an open event of another kind (symbol errors, flapping,
congestion...). Colour AND a mark, so the grids read without colour too; not connected is neutral (a
dash, no colour of an outage).
"""

from __future__ import annotations

from fabricweb.inventory import portfacts

ERRORING = "erroring"
# Worst first: the statuses, with erroring after degraded.
HEALTHS: tuple[str, ...] = (*portfacts.STATUSES[:3], ERRORING, *portfacts.STATUSES[3:])
# What each is called: the status words (`no subnet manager`), and erroring.
HEALTH_WORDS = {h: (ERRORING if h == ERRORING else portfacts.Status(h).words) for h in HEALTHS}
# Not a problem: up at its expected link with no open event, or nothing cabled and nothing expected.
QUIET = frozenset({portfacts.Status.UP.value, portfacts.Status.NOT_CONNECTED.value})
MARKS = {
    "down": "✕",
    "no_subnet_manager": "◇",
    "degraded": "▼",
    "erroring": "!",
    "vanished": "∅",
    "unknown": "?",
    "up": "",
    "not_connected": "–",
}
# The grids' tooltips.
WORDS = {
    "down": "down",
    "no_subnet_manager": "no subnet manager (link up, port INIT or ARMED)",
    "degraded": "degraded",
    "erroring": "errors",
    "vanished": "vanished from its node's snapshots",
    "unknown": "unknown: the node is stale",
    "up": "up",
    "not_connected": "not connected (no link, and none expected)",
}
