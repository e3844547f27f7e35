"""`{{ n|thousands }}`: an integer with thousands separators (`1,234,567`), as every figure on the pages reads;
anything else (unreadable, a word) as it is."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def thousands(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return value
