"""`{% baseline_of port as baseline %}`: the port's accepted baseline (policy, who, when), for the port page's
baseline block, without a change to the port view's context."""

from __future__ import annotations

from django import template

from fabricweb.health.records.actions import baseline_of as _baseline_of
from fabricweb.inventory import portfacts

register = template.Library()


@register.simple_tag
def baseline_of(port):
    """The policy, with `.link`: its link in the port facts' words (Gb/s and name)."""
    policy = _baseline_of(port)
    if policy is not None:
        policy.link = portfacts.named_link(policy.speed, policy.lanes, None, port.link_layer)
    return policy
