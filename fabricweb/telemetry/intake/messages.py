"""What the snapshots queue's messages hold, read without trusting them: `snapshots_of` a message.

Node agents send each snapshot as a Celery task message (`ingest_snapshot`, protocol 2, JSON), and
fabric collectors each sweep (`ingest_fabric`). Only JSON is decoded: every compute node can reach
the broker, and nothing it sends may get unpickled here. A message that can never be stored raises
Dropped, with the reason; one whose signature does not hold, NotAuthenticated (telemetry/validation/auth.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone

from collectors import wire
from fabricweb.names import INGEST_FABRIC, INGEST_SNAPSHOT, SWEEP_QUEUE
from fabricweb.nodeauth import COLLECTOR

from ..validation.auth import authenticated, check_unsigned
from ..validation.quickwire import parse_wire
from ..validation.typed import SnapshotIn
from .jsonread import NotExact, exact_loads

ONE = INGEST_SNAPSHOT
FABRIC = INGEST_FABRIC
JSON = "application/json"
# A real node's snapshot is 10-100 kB of JSON; its signed text is cut at nodeauth.MAX_SNAPSHOT_CHARS (4 MiB),
# here within its message's body, escaped as a JSON string (+15-20% for a snapshot's quotes).
MAX_MESSAGE_BYTES = 6 * 1024 * 1024
# A fabric collector's sweep is ~200 bytes per port of the fabric: room for the caps of fabric/schema.py.
MAX_FABRIC_MESSAGE_BYTES = 80 * 1024 * 1024


def envelope_cap(body_bytes: int) -> int:
    """The most a whole message may take for a body of `body_bytes`: kombu's envelope around it (the body is a
    string in it, escaped once more: +40% for a sweep's quotes, +33% as base64 from older agents), plus its
    headers. Larger messages are drained unread off the socket (fabricweb/cappedredis.py): never held."""
    return body_bytes * 7 // 5 + 64 * 1024


# Per queue: a node's snapshot queues take node-sized messages only, the sweeps queue sweep-sized ones.
MAX_ENVELOPE_BYTES = envelope_cap(MAX_MESSAGE_BYTES)
MAX_SWEEP_ENVELOPE_BYTES = envelope_cap(MAX_FABRIC_MESSAGE_BYTES)


def cap_of(queue: str) -> int:
    """The most one message on `queue` may take (names.SWEEP_QUEUE, or a node's snapshot queue)."""
    return MAX_SWEEP_ENVELOPE_BYTES if queue == SWEEP_QUEUE else MAX_ENVELOPE_BYTES


class Dropped(ValueError):
    """A message that can never be stored: acked at once, the reason logged."""


def message_id(message) -> str:
    return str((message.headers or {}).get("id") or message.delivery_tag)


def decode_body(message) -> object:
    """The JSON body as kombu decodes it, with orjson (~2.5x faster on a snapshot) where that reads the same.

    Anything orjson refuses (NaN, lone surrogates...) or might read differently (an integer past
    64 bits, which it makes a float) is left to kombu, so what is accepted and what
    it decodes to do not change (jsonread.py).
    """
    body = message.body
    if isinstance(body, bytes) and message.content_encoding == "utf-8":
        try:
            return exact_loads(body)
        except NotExact:
            pass
    return message.decode()


def queue_of(message) -> str | None:
    """The queue a message was read from: redisread's TakenMessage says; kombu's delivery, by its routing key."""
    return getattr(message, "queue", None) or (getattr(message, "delivery_info", None) or {}).get("routing_key")


def snapshots_of(message, admit: Callable[[str, str], None] | None = None) -> list:
    """The snapshots in a Celery protocol 2 message of ingest_snapshot (one: typed, or schema 2 for ingest's
    checks) or ingest_fabric (one sweep);
    raise Dropped for anything else. `admit(task, sender)` may refuse a signed message by raising, once its
    signature holds and before its snapshot is decoded (validation/auth.authenticated)."""
    queue = queue_of(message)
    oversized = getattr(message, "oversized", None)
    if oversized is not None:  # never read: its bytes were drained off the socket
        raise Dropped(
            f"{oversized} bytes on queue {queue}, more than the {cap_of(queue)} bytes a message there may take:"
            " drained unread"
        )
    # The content type first: a body that is not JSON is never decoded, so never unpickled.
    if message.content_type != JSON:
        raise Dropped(f"content type {message.content_type!r}: only {JSON} is read")
    task = (message.headers or {}).get("task")
    if task not in (ONE, FABRIC):
        raise Dropped(f"task {task!r} is not an ingest task")
    if queue is not None and (queue == SWEEP_QUEUE) != (task == FABRIC):
        # Each queue's cap fits its own messages only: a node's snapshot queue never carries a sweep.
        raise Dropped(
            f"{task} on queue {queue}: sweeps go to {SWEEP_QUEUE!r} (a fabric collector older than this server?),"
            " node snapshots to the snapshots queues"
        )
    size = len(message.body or b"")
    limit = MAX_FABRIC_MESSAGE_BYTES if task == FABRIC else MAX_MESSAGE_BYTES
    if size > limit:  # before decoding: a 143 MB message must not cost a gigabyte and a stall
        raise Dropped(f"{size} bytes, more than the {limit} a {'sweep' if task == FABRIC else 'node'}'s snapshots take")
    try:
        body = decode_body(message)
    except Exception as e:  # bad JSON, bad encoding: kombu raises several kinds
        raise Dropped(f"undecodable body ({type(e).__name__}: {e})") from None
    if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], list) and isinstance(body[1], dict)):
        raise Dropped("body is not [args, kwargs, embed]")
    args, kwargs = body[0], body[1]
    if task == FABRIC:
        if not args and "signature" in kwargs:
            return [FabricSnapshot(authenticated(kwargs, COLLECTOR, _for(admit, task)))]
        check_unsigned()
        if len(args) + len(kwargs) != 1 or (kwargs and "snapshot" not in kwargs):
            raise Dropped(f"{task} takes one argument, snapshot")
        return [FabricSnapshot(args[0] if args else kwargs["snapshot"])]
    if task == ONE and not args and "signature" in kwargs:
        return [_typed(authenticated(kwargs, admit=_for(admit, task)))]
    check_unsigned()
    if len(args) + len(kwargs) != 1 or (kwargs and "snapshot" not in kwargs):
        raise Dropped(f"{task} takes one argument, snapshot")
    return [_typed(args[0] if args else kwargs["snapshot"])]


def _typed(data: object) -> SnapshotIn | dict:
    """A node's snapshot typed at once where the wire form's quick path takes it (validation/quickwire.py: checked
    against this moment, so against the later one of its storing too); else read back into schema 2 (from_wire)
    for ingest's checks, which word what is wrong."""
    typed = parse_wire(data, timezone.now())
    return typed if typed is not None else from_wire(data)


def from_wire(data: object) -> dict:
    """A node's snapshot as sent (collectors/wire.py) read back into schema 2, which ingest checks as any other;
    Dropped, naming the agent, for a snapshot in another form."""
    if isinstance(data, dict) and "wire" not in data:
        raise Dropped(
            f"a snapshot with named counters (schema {str(data.get('schema'))[:8]}), as agents before the wire"
            f" form sent them: this server reads wire {' and '.join(map(str, wire.READABLE))} only"
            " (collectors/wire.py); upgrade the node's agent"
        )
    try:
        return wire.decode(data)
    except wire.WireError as e:
        agent = data.get("agent") if isinstance(data, dict) else None
        sender = f"agent {agent[:64]!r}" if isinstance(agent, str) else "an agent that gives no name"
        raise Dropped(f"a snapshot from {sender} this server cannot read: {e}") from None


def _for(admit: Callable[[str, str], None] | None, task: str) -> Callable[[str], None] | None:
    return None if admit is None else lambda sender: admit(task, sender)


class FabricSnapshot:
    """A fabric collector's sweep, as its message said (signature checked): stored in a batch of its own."""

    __slots__ = ("data",)

    def __init__(self, data: object) -> None:
        self.data = data
