"""kombu's envelope of a message on a snapshot queue, read without a kombu channel: what redisread takes.

A message taken by redisread.BatchReader is kombu's JSON envelope as it lies in Redis; `envelope` reads it
(orjson where that reads the same as json), `body_of` its body in any form kombu's Redis transport writes
it, and `TakenMessage` is the kombu Message the consumer receives, acked and requeued through its reader.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

import orjson
from kombu.message import Message
from kombu.utils.json import dumps, loads, object_hook

if TYPE_CHECKING:
    from .redisread import BatchReader


def envelope(raw: bytes) -> object:
    """kombu's envelope of a message, as json.loads reads it: with orjson (~2x faster on its ~8-11 kB, mostly
    the body) where that reads the same.

    orjson differs from json only where it refuses (NaN, lone surrogates...) or where it reads an
    integer past 64 bits as a float: an envelope with no float at all in what orjson read had none.
    jsonread's digit scan would cost more than orjson saves here.
    """
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)  # as before; bytes that are not UTF-8 raise ValueError
    stack = [payload]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
        elif type(value) is float:
            return json.loads(raw)
    return payload


def body_of(body: object, encoding: object) -> object:
    """A message's body as bytes, from any form kombu's Redis transport writes it in.

    Base64 text (kombu's default `body_encoding`, older agents), or the body itself
    (names.PLAIN_BODIES): the JSON text as a string (what Celery sends), or, for bytes, kombu's
    JSON of them ({"__type__": "bytes", "__value__": text}, or "base64" when not UTF-8).
    Anything else is returned as it is, for snapshots_of to refuse.
    """
    if type(body) is dict:
        try:
            body = object_hook(body)
        except ValueError:  # a "__type__" kombu does not know
            return body
    if not body:
        return b""
    if type(body) is str:
        if encoding == "base64":
            try:
                return base64.b64decode(body)
            except ValueError:  # not base64 after all: undecodable, dropped with the reason
                return body
        try:
            return body.encode()
        except UnicodeEncodeError:  # a lone surrogate (json.loads lets it through): kombu's to judge
            return body
    return body


def mark_redelivered(payload: dict) -> str:
    """kombu's envelope of a message put back on its queue, marked as kombu marks a redelivery."""
    payload.setdefault("headers", {})["redelivered"] = True
    return dumps(payload)


def redelivered(raw: bytes) -> bytes:
    """mark_redelivered on a raw message (as it was, if it is not a JSON envelope)."""
    try:
        return mark_redelivered(loads(raw)).encode()
    except (ValueError, TypeError, AttributeError):
        return raw


class TakenMessage(Message):
    """A message taken by BatchReader: ack and requeue go through the reader, not a kombu channel."""

    def __init__(self, reader: BatchReader, tag: str, queue: str, raw: bytes, payload: dict) -> None:
        properties = payload.get("properties") or {}
        super().__init__(
            body=body_of(payload.get("body"), properties.get("body_encoding")),
            delivery_tag=tag,
            content_type=payload.get("content-type"),
            content_encoding=payload.get("content-encoding"),
            headers=payload.get("headers"),
            properties=properties,
            accept=["application/json"],
        )
        self.reader, self.queue, self.raw = reader, queue, raw
        self.oversized: int | None = None  # the size of a message drained unread (cappedredis), in bytes
        self.done = False  # acked (removed from its taken list at the next commit_acks)
        self.tracked = True  # on its reader's taken list (False: popped at the broker's maxmemory, on none)

    def ack(self, multiple=False) -> None:
        self.done = True
        self.reader.acks += 1

    def requeue(self) -> None:
        self.reader.requeue(self)
