"""The notification a delivery carries: the documented webhook body (version 1), built when it is routed.

    {"version": 1, "id": "<delivery uuid>", "channel": "oncall", "reason": "firing|resolved|repeat|test",
     "status": "firing|resolved", "title": "...", "count": 2, "created_at": "2026-12-01T00:10:03Z",
     "events": [{"key": "down:cn001/mlx5_0/1", "kind": "down", "severity": "critical",
                 "node": "cn001", "device": "mlx5_0", "port": 1, "message": "...", "reason": "...",
                 "opened_at": "...", "resolved_at": null, "expected_link": "4X HDR",
                 "actual_link": "DOWN / Polling", "acknowledged_by": null, "url": "https://.../ports/cn001/mlx5_0/1/",
                 "switch": "leaf07", "jobs": [{"id": "4242", "name": "allreduce", "user": "alice", "nodes": 64}],
                 "jobs_summary": "1 job: 4242 allreduce (alice, 64 nodes)"}]}

`switch` names the switch an event is about, or the one at the far end of the port's cable (null when
neither): a leaf that loses its power downs every port cabled to it, and the notification that groups
them says so in its title.

`jobs` are the running jobs whose routed paths cross the event's link when the notification is built,
largest first (fabricweb.jobs.impact); `jobs_summary` says them in one line, the first three named.

`actual_link` is the port's link as named by fabricweb.inventory.portfacts (`4X HDR`, `100GbE` on a RoCE
port) while it is up, else its state and physical state in the kernel's words (`DOWN / Polling`),
`vanished` once its node no longer reports it, `unknown` while its node is stale.

Every string from a device (node names, node_desc, messages) is data: transports put it in
JSON, plain text or escaped markup, never in markup as is.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from urllib.parse import quote

from django.conf import settings

from fabricweb.health.models import Event
from fabricweb.inventory import portfacts
from fabricweb.jobs import impact

VERSION = 1


def iso(at: datetime | None) -> str | None:
    return None if at is None else at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _expected(port) -> str | None:
    if not port.expected_speed:
        return None
    link = portfacts.named_link(port.expected_speed, port.expected_lanes, None, port.link_layer)
    return link.name if link is not None and link.name else port.expected_speed


def _actual(port, node_stale: bool) -> str | None:
    """The port's link while up, else its state in words (portfacts: up, the link, vanished, unknown)."""
    if node_stale:
        return portfacts.Status.UNKNOWN.words
    if port.vanished_at is not None:
        return portfacts.Status.VANISHED.words
    if portfacts.is_up(port):
        link = portfacts.link(port)
        return link.name if link is not None and link.name else port.speed
    if port.state_name:
        return " / ".join(filter(None, [port.state_name, port.phys_state_name]))
    return None


def port_url(node: str, device: str | None, port: int | None) -> str:
    """The dashboard page of the port (or node), under FABRIC_BASE_URL (DESIGN.md's URL scheme)."""
    base = settings.FABRIC_BASE_URL.rstrip("/")
    if device is not None and port is not None:
        return f"{base}/ports/{quote(node, safe='')}/{quote(device, safe='')}/{port}/"
    return f"{base}/nodes/{quote(node, safe='')}/"


def event_item(event: Event, jobs: list | None = None) -> dict:
    """One event as the body lists it; needs node, device, port and acknowledgement loaded. `jobs`: the running
    jobs crossing its link (fabricweb.jobs.impact.JobBrief), largest first."""
    device = event.device.name if event.device_id is not None else None
    port = event.port if event.port_id is not None else None
    actual = None if port is None else _actual(port, portfacts.node_is_stale(event.node))
    ack = getattr(event, "acknowledgement", None)  # reverse one-to-one: absent raises, getattr says None
    switch = event.node.name if event.node.kind == "switch" else None
    if switch is None and port is not None and port.peer is not None and port.peer.device.node.kind == "switch":
        switch = port.peer.device.node.name
    return {
        "key": event.key,
        "kind": event.kind,
        "severity": event.severity,
        "node": event.node.name,
        "device": device,
        "port": port.number if port is not None else None,
        "message": event.message,
        "reason": event.reason,
        "opened_at": iso(event.opened_at),
        "resolved_at": iso(event.resolved_at),
        "expected_link": _expected(port) if port is not None else None,
        "actual_link": actual,
        "acknowledged_by": ack.by_name if ack is not None else None,
        "url": port_url(event.node.name, device, port.number if port is not None else None),
        "switch": switch,
        "jobs": [b.as_dict() for b in jobs or ()],
        "jobs_summary": impact.summary(list(jobs or ())) if jobs else None,
    }


def title(reason: str, items: list[dict]) -> str:
    """One line: what happened, e.g. `FIRING: cn001 mlx5_0/1: port down (...)` or `FIRING: 36 events on cn001 ...`."""
    word = {"firing": "FIRING", "resolved": "RESOLVED", "repeat": "STILL FIRING", "test": "TEST"}[reason]
    if len(items) == 1:
        return f"{word}: {items[0]['message']}"
    worst = min((i["severity"] for i in items), key=("critical", "warning", "info").index)
    switch = _common_switch(items)
    if switch is not None:
        lost = next((i["message"] for i in items if i["kind"] == "unreachable" and i["node"] == switch), None)
        return f"{word}: {len(items)} events ({worst}) around switch {switch}" + (f": {lost}" if lost else "")
    nodes = sorted({i["node"] for i in items})
    where = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more nodes" if len(nodes) > 3 else "")
    return f"{word}: {len(items)} events ({worst}) on {where}"


def _common_switch(items: list[dict]) -> str | None:
    """The switch the group is about: named by every event, or unreachable and named by half of them."""
    named = Counter(i.get("switch") for i in items if i.get("switch"))
    if not named:
        return None
    switch, count = named.most_common(1)[0]
    unreachable = any(i["kind"] == "unreachable" and i["node"] == switch for i in items)
    return switch if count == len(items) or (unreachable and 2 * count >= len(items)) else None


def build(uid: str, channel: str, reason: str, items: list[dict], created_at: datetime) -> dict:
    return {
        "version": VERSION,
        "id": uid,
        "channel": channel,
        "reason": reason,
        "status": "resolved" if reason == "resolved" else "firing",
        "title": title(reason, items),
        "count": len(items),
        "created_at": iso(created_at),
        "events": items,
    }


def text(payload: dict) -> str:
    """The plain-text form (email, chat): the title, then per event what, where, since when, link."""
    lines = [payload["title"], ""]
    for item in payload["events"]:
        lines.append(f"- [{item['severity']}] {item['message']}")
        since = f"  since {item['opened_at']}"
        if item["resolved_at"]:
            since += f", resolved {item['resolved_at']}"
        lines.append(since)
        if item["expected_link"] or item["actual_link"]:
            lines.append(
                f"  link: expected {item['expected_link'] or 'unknown'}, actual {item['actual_link'] or 'unknown'}"
            )
        if item["reason"]:
            lines.append(f"  why: {item['reason']}")
        if item.get("jobs_summary"):
            lines.append(f"  jobs crossing it: {item['jobs_summary']}")
        if item["acknowledged_by"]:
            lines.append(f"  acknowledged by {item['acknowledged_by']}")
        lines.append(f"  {item['url']}")
    lines.append("")
    lines.append(f"notification {payload['id']}")
    return "\n".join(lines)
