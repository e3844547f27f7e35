"""A problem row's columns: where (the port, and the far end of its cable), what (its kind in two or three
words), and on /events/ the reason (the evidence: the sentence after its "where: ") and the status.

The sentence stays the row's detail: these columns make a list of them scannable, they replace none of it.
"""

from __future__ import annotations

from django.urls import reverse

from fabricweb.health.rules.findings import Kind, port_label
from fabricweb.inventory.models import Node

from .rowactions import why

WHAT = {
    Kind.DOWN: "port down",
    Kind.DEGRADED: "link degraded",
    Kind.NO_SM: "no subnet manager",
    Kind.SYMBOL_ERRORS: "symbol errors",
    Kind.FLAPPING: "link flapping",
    Kind.RCV_ERRORS: "receive errors",
    Kind.REMOTE_PHYSICAL_ERRORS: "remote physical errors",
    Kind.XMIT_DISCARDS: "transmit discards",
    Kind.LINK_INTEGRITY: "link integrity errors",
    Kind.BUFFER_OVERRUN: "buffer overruns",
    Kind.CONGESTION: "port congested",
    Kind.CAPPED: "counters capped",
    Kind.PCIE: "PCIe link slow",
    Kind.PAUSE_RECEIVED: "PFC pause received",
    Kind.PAUSE_SENT: "PFC pause sent",
    Kind.PAUSE_STORM: "PFC pause storm",
    Kind.CNP_STORM: "ECN/CNP storm",
    Kind.ROCE_LOSS: "RoCE packet loss",
    Kind.RX_DISCARDS: "drops on arrival",
    Kind.PCIE_PATH: "PCIe hop slow",
    Kind.PCIE_SHARED: "PCIe uplink shared",
    Kind.GPU_AFFINITY: "GPU across sockets",
    Kind.PCIE_NUMA: "NUMA node unknown",
    Kind.STALE: "host stale",
    Kind.CLOCK_SKEW: "clock skew",
    Kind.VANISHED: "port vanished",
    Kind.UNREACHABLE: "switch unreachable",
    Kind.CABLING: "cabling wrong",
    Kind.DRAIN: "host drained",
    Kind.GUID_CONFLICT: "GUID claimed twice",
    Kind.NAME_CONFLICT: "name claimed twice",
}


def what(kind: str) -> str:
    return WHAT.get(kind, kind.replace("_", " "))


def _node_url(node) -> str:
    return reverse("dashboard:switch" if node.kind == Node.Kind.SWITCH else "dashboard:node", args=[node.name])


def where(event) -> dict:
    """label and url of what the event is on (a port, a device, a node); far and far_url: the far end of the
    port's cable as the sweeps saw it (its label is the far end's own words: untrusted, escaped on output).
    Needs the event's node, device, port and port.peer.device.node loaded."""
    node = event.node
    if event.port_id is None:
        label = f"{node.name} {event.device.name}" if event.device_id else node.name
        return {"label": label, "url": _node_url(node), "far": "", "far_url": ""}
    port = event.port
    url = reverse("dashboard:port", args=[node.name, event.device.name, port.number])
    far, far_url = port.peer_label or "", ""
    if port.peer_id is not None:
        peer = port.peer
        far = far or port_label(peer.device.node.name, peer.device.name, peer.number)
        far_url = reverse("dashboard:port", args=[peer.device.node.name, peer.device.name, peer.number])
    return {"label": port_label(node.name, event.device.name, port.number), "url": url, "far": far, "far_url": far_url}


def evidence(event) -> str:
    """The sentence after the place it names (`cn002 mlx4_0/1: trained at ...` -> `trained at ...`)."""
    head, sep, rest = event.message.partition(": ")
    return rest if sep and head.startswith(event.node.name) else event.message


def status(event) -> str:
    """open or resolved, and what last changed it (rowactions.why: found at its last poll, resolving...)."""
    said = why(event)
    if event.resolved_at is not None:
        return said  # "resolved: clear for 3 polls"
    return f"open: {said}"


def mark_rows(events) -> None:
    """Set `what`, `where`, `evidence` and `status_words` on each of `events` for the problem and event rows."""
    for event in events:
        event.what = what(event.kind)
        event.where = where(event)
        event.evidence = evidence(event)
        event.status_words = status(event)
