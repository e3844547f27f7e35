"""`{{ guid|guid }}`: a GUID as ibstat and iblinkinfo print it (`0x0c42a10300a1b2c1`), whichever form it was
stored in (collectors.facts.guid_words); "unknown" when there is none."""

from __future__ import annotations

from django import template

from collectors.facts import guid_words

register = template.Library()


@register.filter
def guid(value):
    return guid_words(value) or "unknown"
