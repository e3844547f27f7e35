"""A port's health on the pages, its words and its mark: stated once for the grids, tables, filters and legends.

A port's health is its status (fabricweb.inventory.portfacts.Status, worst first), with one the pages add:
"flapping", a port with an open flapping event (problem, not advice), one mark whether this poll found it
down or up; "erroring", a port up at its expected link with an open problem of another kind (symbol errors,
congestion...); and "PCIe-limited", a port up at its expected link whose only open problems are its card's PCIe
(PCIE_KINDS: a link or a hop above the card too slow for the port, an uplink shared with GPUs...): nothing is
wrong on its cable, and it counts no errors. Advice (info) marks no port: it is listed apart. Colour AND a mark,
so the grids read without colour too; not connected is neutral (a dash, no colour of an outage).
"""

from __future__ import annotations

from fabricweb.health.rules.findings import Kind
from fabricweb.inventory import portfacts

ERRORING = "erroring"
FLAPPING = "flapping"
PCIE_LIMITED = "pcie_limited"
# The health rules' PCIe findings (fabricweb/health/rules/findings.py Kind): the card's own link, its path, an uplink
# shared with GPUs, a GPU far from every card, a card's NUMA node unknown. Findings on the HCA, not its cable.
PCIE_KINDS = frozenset(
    k.value for k in (Kind.PCIE, Kind.PCIE_PATH, Kind.PCIE_SHARED, Kind.GPU_AFFINITY, Kind.PCIE_NUMA)
)
_OURS = {ERRORING: "erroring", FLAPPING: "flapping", PCIE_LIMITED: "PCIe-limited"}
# Worst first: the statuses, with flapping after down, erroring and PCIe-limited after degraded.
HEALTHS: tuple[str, ...] = (
    portfacts.STATUSES[0],
    FLAPPING,
    *portfacts.STATUSES[1:3],
    ERRORING,
    PCIE_LIMITED,
    *portfacts.STATUSES[3:],
)
# What each is called: the status words (`no subnet manager`), flapping, erroring and PCIe-limited.
HEALTH_WORDS = {h: _OURS.get(h) or portfacts.Status(h).words for h in HEALTHS}
# Not a problem: up at its expected link with no open event, or nothing cabled and nothing expected.
QUIET = frozenset({portfacts.Status.UP.value, portfacts.Status.NOT_CONNECTED.value})
MARKS = {
    "down": "✕",
    "flapping": "↕",
    "no_subnet_manager": "◇",
    "degraded": "▼",
    "erroring": "!",
    "pcie_limited": "⇣",
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
    "pcie_limited": "PCIe-limited, no errors",
    "vanished": "vanished from its node's snapshots",
    "unknown": "unknown: the node is stale",
    "up": "up",
    "not_connected": "not connected (no link, and none expected)",
}

# How the overview marks a channel adapter no agent reports (a storage server, a gateway: fabric/adapters.py).
ADAPTER_WORDS = "CA, read by the fabric collector (no agent reports it)"

# A problem's kind in the grids' tooltips, where the kind name alone would not say it.
KIND_WORDS = {
    "pcie": "PCIe link too slow for the port",
    "pcie_path": "a PCIe hop above the card too slow or trained low",
    "rcv_errors": "receive errors",
    "xmit_discards": "discards",
}


def kind_words(kinds) -> str:
    return ", ".join(KIND_WORDS.get(k, k.replace("_", " ")) for k in sorted(kinds))
