"""kombu's Redis transport for the batch consumer, with one redis-py client per channel.

kombu's Redis channel builds a new redis-py client object for every pipeline it runs
(`Channel.conn_or_acquire` -> `_create_client`), and the consumer runs two per message:
adding it to the unacked set on delivery and removing it at the ack. Each construction
costs ~0.25 ms of Python, about a quarter of the consumer's time per message
(BENCHMARKS.md). A redis-py client is a thin, reusable front of its connection pool, so
this channel builds its synchronous client once. The asynchronous one (the BRPOP
connection kombu polls) is left as kombu makes it.

Its connections drop messages over the consumer's `max_message_bytes` unread (cappedredis.py).
Only for `redis://` brokers; any other URL (TLS, Sentinel, memory, AMQP) keeps the app's
transport (for rediss://, cappedredis.Transport). Pinned kombu (pyproject.toml); tests/pipeline runs the consumer on it.
"""

from __future__ import annotations

from urllib.parse import urlparse

from fabricweb import cappedredis

TRANSPORT = "fabricweb.telemetry.intake.broker:Transport"


class Channel(cappedredis.Channel):
    _sync_client = None

    def _create_client(self, asynchronous=False):
        if asynchronous:
            return super()._create_client(asynchronous=True)
        if self._sync_client is None:
            self._sync_client = super()._create_client()
        return self._sync_client


class Transport(cappedredis.Transport):
    Channel = Channel


def transport_for(url: str) -> str | None:
    """This transport for a plain Redis broker URL; None (the URL's own) for anything else."""
    return TRANSPORT if urlparse(url or "").scheme == "redis" else None
