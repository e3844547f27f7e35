"""A port's health on the pages, its words and its mark: stated once for the grids, tables, filters and legends.

A port's health is its status (fabricweb.inventory.portfacts.Status, worst first), with one the pages add:
"flapping", a port with an open flapping event (problem, not advice), one mark whether this poll found it
down or up; and "erroring", a port up at its expected link with an open problem of another kind (symbol
errors, congestion, a PCIe link too slow for it...). Advice (info) marks no port: it is listed apart. Colour
AND a mark, so the grids read without colour too; not connected is neutral (a dash, no colour of an outage).
"""

from __future__ import annotations

from fabricweb.inventory import portfacts

ERRORING = "erroring"
FLAPPING = "flapping"
_OURS = (ERRORING, FLAPPING)
# Worst first: the statuses, with flapping after down and erroring after degraded.
HEALTHS: tuple[str, ...] = (
    portfacts.STATUSES[0],
    FLAPPING,
    *portfacts.STATUSES[1:3],
    ERRORING,
    *portfacts.STATUSES[3:],
)
# What each is called: the status words (`no subnet manager`), flapping and erroring.
HEALTH_WORDS = {h: (h if h in _OURS else portfacts.Status(h).words) for h in HEALTHS}
# Not a problem: up at its expected link with no open event, or nothing cabled and nothing expected.
QUIET = frozenset({portfacts.Status.UP.value, portfacts.Status.NOT_CONNECTED.value})
MARKS = {
    "down": "✕",
    "flapping": "↕",
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
    "flapping": "flapping (the link keeps going down or retraining)",
    "no_subnet_manager": "no subnet manager (link up, port INIT or ARMED)",
    "degraded": "degraded",
    "erroring": "errors",
    "vanished": "vanished from its node's snapshots",
    "unknown": "unknown: the node is stale",
    "up": "up",
    "not_connected": "not connected (no link, and none expected)",
}

# A problem's kind in the grids' tooltips, where the kind name alone would not say it.
KIND_WORDS = {
    "pcie": "PCIe link too slow for the port",
    "pcie_path": "a PCIe hop above the card too slow or trained low",
    "rcv_errors": "receive errors",
    "xmit_discards": "discards",
}


def kind_words(kinds) -> str:
    return ", ".join(KIND_WORDS.get(k, k.replace("_", " ")) for k in sorted(kinds))
