"""The broker's memory against its `maxmemory`: what /healthz reports and /metrics exports, for an alert
before Redis refuses writes.

Every node may push snapshots, so the broker's memory is the one thing a flood of them grows (a node's
ACL user can write nothing else: brokeracl.py). The shipped Redis runs with a `maxmemory` and the
`noeviction` policy (docker-compose.yml, docs/security.md): nothing central is ever evicted, and past the
limit Redis refuses the commands that grow it, the nodes' pushes among them, while the ingest consumer
goes on taking with commands Redis still runs at the limit (telemetry/intake/redisread.py). Read with
`INFO memory`, the one command of @dangerous the central user is given (brokeracl.CENTRAL_RULES).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import redis

log = logging.getLogger(__name__)

HIGH_RATIO = 0.8  # used over maxmemory: /healthz says degraded, the shipped alert fires (FabricwebBrokerMemoryHigh)
TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class BrokerMemory:
    used_bytes: int  # INFO memory's used_memory
    max_bytes: int  # maxmemory; 0: none set (Redis grows until the host runs out)
    policy: str  # maxmemory_policy

    @property
    def ratio(self) -> float | None:
        return self.used_bytes / self.max_bytes if self.max_bytes else None

    @property
    def high(self) -> bool:
        return self.ratio is not None and self.ratio >= HIGH_RATIO

    def summary(self) -> str:
        used = f"{self.used_bytes / 2**20:.0f} MiB"
        if not self.max_bytes:
            return f"{used} used, no maxmemory set: a flood of snapshots can take the host's memory"
        return f"{used} used of its maxmemory of {self.max_bytes / 2**20:.0f} MiB ({self.ratio:.0%}, {self.policy})"


def read(client: redis.Redis) -> BrokerMemory:
    """The broker's memory now; redis.RedisError when it does not answer or refuses INFO."""
    info = client.info("memory")
    return BrokerMemory(int(info["used_memory"]), int(info.get("maxmemory", 0)), str(info.get("maxmemory_policy", "")))


def read_url(url: str, options: dict) -> BrokerMemory | None:
    """read() on this process's client of `url` (made once: a client made and closed per scrape leaves
    reference cycles behind); None (logged) when the broker does not tell."""
    try:
        return read(_client(url, tuple(sorted(options.items(), key=lambda item: item[0]))))
    except (redis.RedisError, KeyError, ValueError) as e:
        log.warning("the broker's memory could not be read: %s", e)
        return None


@functools.lru_cache(maxsize=4)
def _client(url: str, options: tuple) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S, **dict(options))
