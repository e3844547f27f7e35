"""`{{ event|critical_why }}`: why a critical event is critical, in one line, for the problem and event rows
(fabricweb.health.records.critical); empty for any other severity."""

from __future__ import annotations

from django import template

from fabricweb.health.records.critical import critical_reason

register = template.Library()


@register.filter
def critical_why(event) -> str:
    if event.severity != "critical":
        return ""
    source = event.port.expected_source if event.port_id is not None else ""
    return critical_reason(event.kind, event.details, source)
