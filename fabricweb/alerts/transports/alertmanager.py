"""Prometheus Alertmanager: POST /api/v2/alerts, one alert per event, so a site's Alertmanager routes
(PagerDuty, Opsgenie, ...) keep working.

Labels: alertname (`InfinibandDown`, from the kind), node, device, port, kind, severity.
Firing alerts carry endsAt = now + KEEP_S; routing re-sends firing ones every REFRESH_S
(Alertmanager resolves an alert no one repeats). A resolution sets endsAt to when the event
resolved. Alertmanager deduplicates by labels, so sending one twice is harmless.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fabricweb.alerts.payload import iso

from .base import Transport
from .http import post_json

REFRESH_S = 60.0
KEEP_S = 5 * REFRESH_S


def alertname(kind: str) -> str:
    return "Infiniband" + "".join(part.capitalize() for part in kind.split("_"))


def alert(item: dict, resolved: bool, now: datetime) -> dict:
    labels = {"alertname": alertname(item["kind"]), "node": item["node"], "kind": item["kind"]}
    labels["severity"] = item["severity"]
    if item["device"] is not None:
        labels["device"] = item["device"]
    if item["port"] is not None:
        labels["port"] = str(item["port"])
    annotations = {"summary": item["message"], "description": item["reason"]}
    for name in ("expected_link", "actual_link", "acknowledged_by"):
        if item[name]:
            annotations[name] = item[name]
    if item.get("jobs_summary"):  # the running jobs crossing the link (payload.event_item)
        annotations["jobs"] = item["jobs_summary"]
    ends = item["resolved_at"] if resolved and item["resolved_at"] else iso(now + timedelta(seconds=KEEP_S))
    return {
        "labels": labels,
        "annotations": annotations,
        "startsAt": item["opened_at"],
        "endsAt": ends,
        "generatorURL": item["url"],
    }


class AlertmanagerTransport(Transport):
    kind = "alertmanager"

    def send(self, channel, payload: dict) -> None:
        now = datetime.now(UTC)
        resolved = payload["status"] == "resolved"
        alerts = [alert(item, resolved, now) for item in payload["events"]]
        post_json(self.url(channel).rstrip("/") + "/api/v2/alerts", alerts)
