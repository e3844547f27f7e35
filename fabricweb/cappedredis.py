"""Broker replies over a size cap, drained from the socket unread: what a node may not send costs no memory.

Without per-node ACLs any node can push anything onto any central queue. redis-py reads a bulk
reply whole (its SocketBuffer keeps every byte in a BytesIO until the reply is parsed), so one
143 MB message cost a Celery worker a 10 s stall and the ingest consumer 0.8 GB. `CappedParser`
is redis-py's pure-Python parser (the one it uses without hiredis) except for a bulk string
longer than its cap: that one is read from the socket in small chunks straight into nothing, and
stands in the reply as an `Oversized` marker (falsy, so code that skips an empty reply skips it).
The rest of the reply, and the next, parse as usual: the messages after it in a batch are not lost.

Used by the ingest consumer's connections (telemetry/intake, cap: messages.MAX_ENVELOPE_BYTES)
and, through `Transport` (the central Celery app's broker transport: fabricweb/celery.py, cap:
settings.FABRIC_TASK_MESSAGE_MAX_BYTES), by the Celery workers of `ingest` and `alerts`: a BRPOP
that brings an oversized message has removed it from its queue; it is logged, counted and skipped.

Its `QoS` frees a message's prefetch slot even when Redis did not take the ack (kombu's keeps the slot
then): a worker whose late-acked task ended while Redis was down would otherwise never consume again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import socket
from collections import Counter
from io import SEEK_END

from kombu.transport import redis as kombu_redis
from redis._parsers.resp3 import _RESP3Parser
from redis._parsers.socket import SERVER_CLOSED_CONNECTION_ERROR, SocketBuffer
from redis.exceptions import ConnectionError
from redis.utils import SENTINEL

log = logging.getLogger(__name__)

TRANSPORT = "fabricweb.cappedredis:Transport"
DRAIN_CHUNK = 64 * 1024  # read and thrown away at a time: the most an oversized reply holds in memory
# kombu's priority queues are `<queue>\x06\x16<n>`: logged by the queue's own name.
_PRIORITY_SEP = "\x06\x16"

# Oversized messages dropped by this process, by queue (what a log line says "N dropped since start" of).
DROPPED: Counter[str] = Counter()


class Oversized:
    """A bulk reply of `size` bytes, over the cap: drained from the socket, never held."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Oversized({self.size} bytes)"


class CappedBuffer(SocketBuffer):
    """redis-py's SocketBuffer, except that a bulk string over `cap` bytes is skipped: those bytes already in
    the buffer by seeking past them, the rest received in small chunks and thrown away (never written to
    the BytesIO, which keeps every byte read until the whole reply is parsed)."""

    def __init__(self, sock, socket_read_size: int, socket_timeout, cap: int) -> None:
        super().__init__(sock, socket_read_size, socket_timeout)
        self.cap = cap
        self.drained = False  # since the last purge: the reply cannot be read again from the start

    def read(self, length: int, timeout=SENTINEL):
        if length <= self.cap:
            return super().read(length, timeout=timeout)
        self._drain(length + 2, timeout)  # with its \r\n
        return Oversized(length)

    def _drain(self, left: int, timeout) -> None:
        self.drained = True
        buf = self._buffer
        here = buf.tell()
        skip = min(left, buf.seek(0, SEEK_END) - here)
        buf.seek(here + skip)
        left -= skip
        if not left:
            return
        sock = self._sock
        if timeout is not SENTINEL:
            sock.settimeout(timeout)
        chunk = bytearray(DRAIN_CHUNK)
        try:
            while left:
                got = sock.recv_into(chunk, min(left, DRAIN_CHUNK))  # never past the string: the next reply stays
                if not got:
                    raise ConnectionError(SERVER_CLOSED_CONNECTION_ERROR)
                left -= got
        except OSError as e:  # a socket timeout too
            raise ConnectionError(f"lost the broker while draining an oversized reply: {e}") from None
        finally:
            if timeout is not SENTINEL:
                sock.settimeout(self.socket_timeout)

    def rewind(self, pos: int) -> None:
        # redis-py rewinds to read a reply again after a timeout part-way; drained bytes cannot be read again,
        # so the connection is closed instead (the next command reconnects) rather than left out of step.
        if self.drained:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            raise ConnectionError("a reply with an oversized string was cut short: connection closed")
        super().rewind(pos)

    def purge(self) -> None:
        self.drained = False
        super().purge()


class CappedParser(_RESP3Parser):
    """redis-py's pure-Python parser (RESP3: redis-py 8 speaks it by default, and reads RESP2 replies too),
    reading bulk strings over `cap` bytes as Oversized markers, drained unread (CappedBuffer)."""

    cap: int = 0

    def on_connect(self, connection) -> None:
        super().on_connect(connection)
        self._buffer = CappedBuffer(self._sock, self.socket_read_size, connection.socket_timeout, self.cap)


@functools.cache
def capped_parser(cap: int) -> type[CappedParser]:
    """The parser class (redis-py's `parser_class`) dropping bulk replies over `cap` bytes."""
    if cap < 1:
        raise ValueError("the cap of a broker reply must be 1 byte or more")
    return type(f"CappedParser{cap}", (CappedParser,), {"cap": cap})


def note_dropped(queue: str, size: int, cap: int | None = None, what: str = "") -> int:
    """Count and log a message of `size` bytes dropped unread from `queue`; how many since start."""
    queue = queue.split(_PRIORITY_SEP, 1)[0]
    DROPPED[queue] += 1
    log.warning(
        "dropped %sa message of %d bytes on queue %s, over the %s: drained unread (%d dropped from %s since start)",
        what,
        size,
        queue,
        f"cap of {cap} bytes" if cap else "size cap",
        DROPPED[queue],
        queue,
    )
    return DROPPED[queue]


@functools.cache
def _capped_client(base: type, cap: int) -> type:
    class CappedClient(base):
        def parse_response(self, connection, command_name, **options):
            response = super().parse_response(connection, command_name, **options)
            # BRPOP has removed the message from its queue: drop it as "nothing came" (kombu: Empty).
            if command_name == "BRPOP" and response and isinstance(response[1], Oversized):
                note_dropped(_text(response[0]), response[1].size, cap)
                return None
            return response

    return CappedClient


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class QoS(kombu_redis.QoS):
    """kombu's Redis QoS, except that an ack or reject the broker did not take still frees the prefetch slot.

    kombu frees it only once Redis has answered. A worker whose late-acked task ended while Redis was down
    kept the slot for good: with a prefetch of 1 it sent no BRPOP again, and nothing told Celery to reconnect
    (it logs "Couldn't ack" and goes on), so it took no task until restarted while its queue filled. Freed,
    the next BRPOP reconnects or fails as a connection error Celery recovers from. The message stays in
    Redis's unacked index if Redis kept it, restored after the visibility timeout: run twice at worst, as
    late acknowledgement allows (ingest is idempotent)."""

    def ack(self, delivery_tag):
        try:
            super().ack(delivery_tag)
        finally:
            self._quick_ack(delivery_tag)  # (marks it acked: twice is harmless)

    def reject(self, delivery_tag, requeue=False):
        try:
            super().reject(delivery_tag, requeue=requeue)
        finally:
            self._quick_ack(delivery_tag)


class Channel(kombu_redis.Channel):
    """kombu's Redis channel, its connections reading with CappedParser when `max_message_bytes` is set, its
    QoS freeing a prefetch slot whatever became of the ack.

    Elsewhere in kombu an oversized reply is falsy, so skipped: an RPOP (basic_get) as an empty queue,
    an unacked entry (restore) or a fanout message as empty."""

    QoS = QoS
    from_transport_options = (*kombu_redis.Channel.from_transport_options, "max_message_bytes")
    max_message_bytes: int | None = None

    def _connparams(self, asynchronous=False):
        params = super()._connparams(asynchronous=asynchronous)
        if self.max_message_bytes:
            params["parser_class"] = capped_parser(self.max_message_bytes)
        return params

    def _get_client(self):
        client = super()._get_client()
        if self.max_message_bytes and isinstance(client, type):  # (a global_keyprefix makes it a partial)
            return _capped_client(client, self.max_message_bytes)
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
