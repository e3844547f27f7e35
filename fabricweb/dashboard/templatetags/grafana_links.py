"""`{% grafana_port_url port as url %}`: the port's Grafana panel (fabricweb.dashboard.grafana), None when
FABRIC_GRAFANA_URL is unset; for the port page, without a change to the port view's context."""

from __future__ import annotations

from django import template
from django.conf import settings

from ..grafana import port_panel_url

register = template.Library()


@register.simple_tag
def grafana_port_url(port) -> str | None:
    device = port.device
    return port_panel_url(settings.FABRIC_GRAFANA_URL, device.node.name, device.name, port.number)
