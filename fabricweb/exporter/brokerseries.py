"""The broker's memory on /metrics (fabricweb/brokermemory.py), for the shipped alert FabricwebBrokerMemoryHigh.

Read from Redis at each scrape of the health set (one INFO, ~1 ms); absent when the broker does not answer,
so a broker that is down costs its series, not the scrape.
"""

from __future__ import annotations

from django.conf import settings

from fabricweb import brokermemory

from .series import Families

USED = "fabricweb_broker_memory_used_bytes"
MAX = "fabricweb_broker_memory_max_bytes"


def broker_memory(out: Families) -> None:
    memory = brokermemory.read_url(settings.CELERY_BROKER_URL, settings.REDIS_CLIENT_OPTIONS)
    if memory is None:
        return
    out.family(USED, "Memory the broker (Redis) uses, INFO used_memory").add({}, memory.used_bytes)
    out.family(MAX, "The broker's maxmemory; 0 when none is set (no limit)").add({}, memory.max_bytes)
