"""Template filters: where a node's page is (a switch's is /switches/<name>/), a port as operators name it, a
port's health as a mark and in words."""

from __future__ import annotations

from django import template
from django.urls import reverse

from fabricweb.health.rules.findings import port_label
from fabricweb.inventory.models import Node

register = template.Library()


@register.filter
def node_url(node: Node) -> str:
    if node.kind == Node.Kind.SWITCH:
        return reverse("dashboard:switch", args=[node.name])
    return reverse("dashboard:node", args=[node.name])


@register.filter
def port_url(port) -> str:
    """The dashboard page of a Port (its device and node loaded)."""
    return reverse("dashboard:port", args=[port.device.node.name, port.device.name, port.number])


@register.filter
def port_name(port) -> str:
    """`cn042 mlx5_0/1`, a switch's `leaf07 port 12` (its device and node loaded)."""
    return port_label(port.device.node.name, port.device.name, port.number)


@register.filter
def health_mark(health: str) -> str:
    """The one-character mark of a port's health (fabricweb.dashboard.grid.MARKS): `✕` down, `–` not connected..."""
    from fabricweb.dashboard.marks import MARKS

    return MARKS.get(health, "")


@register.filter
def health_words(health: str) -> str:
    """A port's health in words: `no subnet manager`, `not connected`, `erroring`..."""
    from fabricweb.dashboard.marks import HEALTH_WORDS

    return HEALTH_WORDS.get(health, health)
