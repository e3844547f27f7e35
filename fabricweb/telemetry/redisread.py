"""Take a whole batch of snapshot messages from Redis in one round trip, ack a batch in another.

kombu's Redis transport delivers one message per BRPOP and keeps it in its unacked hash with
a pipeline of its own, then removes it at the ack with another: three round trips and two
pipelines per message, ~1-1.5 ms each on the test machine, about a third of the consumer's
time. Here one Lua script pops up to N messages from the queues and records them as unacked,
atomically (a message is always on its queue or in the unacked hash), and the acks of a
batch go in one pipeline.

The unacked hash and its index are kombu's, in kombu's format (`[payload, exchange, routing
key]` by delivery tag, the index scored by delivery time), so the same keys work with
kombu's restore (visibility timeout) and with shards.sweep. Tags are `ingest.<n>` from a
counter, unique per broker database. Only for plain redis:// brokers, like telemetry/broker.py.
"""

from __future__ import annotations

import base64
import json
import time

import orjson
import redis
from kombu.message import Message
from kombu.utils.json import dumps, loads, object_hook

TAG_COUNTER_KEY = "ingest.delivery_tag"

# KEYS: unacked hash, unacked index, tag counter, queues... ; ARGV: most messages to take, now (s).
# Returns a flat list: tag, queue, raw message, tag, queue, raw message...
_TAKE = """
local out, room = {}, tonumber(ARGV[1])
for i = 4, #KEYS do
  if room <= 0 then break end
  local got = redis.call('RPOP', KEYS[i], room)
  if got then
    for _, raw in ipairs(got) do
      local tag = 'ingest.' .. redis.call('INCR', KEYS[3])
      redis.call('HSET', KEYS[1], tag, '[' .. raw .. ',"",' .. cjson.encode(KEYS[i]) .. ']')
      redis.call('ZADD', KEYS[2], ARGV[2], tag)
      table.insert(out, tag)
      table.insert(out, KEYS[i])
      table.insert(out, raw)
    end
    room = room - #got
  end
end
return out
"""


def _envelope(raw: bytes) -> object:
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


def _body(body: object, encoding: object) -> object:
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


class TakenMessage(Message):
    """A message taken by BatchReader: ack and requeue go through the reader, not a kombu channel."""

    def __init__(self, reader: BatchReader, tag: str, queue: str, payload: dict) -> None:
        properties = payload.get("properties") or {}
        super().__init__(
            body=_body(payload.get("body"), properties.get("body_encoding")),
            delivery_tag=tag,
            content_type=payload.get("content-type"),
            content_encoding=payload.get("content-encoding"),
            headers=payload.get("headers"),
            properties=properties,
            accept=["application/json"],
        )
        self.reader, self.queue, self.raw = reader, queue, payload

    def ack(self, multiple=False) -> None:
        self.reader.acks.append(self.delivery_tag)

    def requeue(self) -> None:
        self.reader.requeue(self)


class BatchReader:
    """Reads snapshot queues for one consumer, whose unacked messages live under `keys` (kombu's names)."""

    def __init__(self, client: redis.Redis, keys: dict[str, str]) -> None:
        self.client = client
        self.unacked, self.index = keys["unacked_key"], keys["unacked_index_key"]
        self.acks: list[str] = []
        self._take = client.register_script(_TAKE)

    def take(self, queues: list[str], most: int) -> list[TakenMessage]:
        """Up to `most` messages, from the first queues first; each on its queue or unacked, never neither."""
        if most <= 0 or not queues:
            return []
        flat = self._take(keys=[self.unacked, self.index, TAG_COUNTER_KEY, *queues], args=[most, time.time()])
        out = []
        for i in range(0, len(flat), 3):
            tag, queue, raw = flat[i : i + 3]
            tag, queue = (x.decode() if isinstance(x, bytes) else x for x in (tag, queue))
            try:
                payload = _envelope(raw)
            except ValueError:
                payload = {"properties": {}, "content-type": "invalid", "body": b""}  # dropped by its content type
            out.append(TakenMessage(self, tag, queue, payload if isinstance(payload, dict) else {}))
        return out

    def commit_acks(self) -> None:
        """Remove every message acked since the last call from the unacked hash: one round trip."""
        if not self.acks:
            return
        tags, self.acks = self.acks, []
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hdel(self.unacked, *tags).zrem(self.index, *tags).execute()

    def requeue(self, message: TakenMessage) -> None:
        """Back at the end of its queue (as kombu's requeue: read after what waits there now)."""
        with self.client.pipeline() as pipe:  # MULTI: on the queue again and out of unacked together
            pipe.hdel(self.unacked, message.delivery_tag).zrem(self.index, message.delivery_tag)
            pipe.lpush(message.queue, dumps(message.raw)).execute()

    def restore_older_than(self, seconds: float) -> int:
        """Put messages unacked for longer than `seconds` back at the head of their queues (a consumer
        killed holding them, sharing these keys); how many."""
        ceil = time.time() - seconds
        restored = 0
        for tag in self.client.zrangebyscore(self.index, "-inf", ceil):
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(self.unacked)
                    entry = pipe.hget(self.unacked, tag)
                    pipe.multi()
                    pipe.hdel(self.unacked, tag).zrem(self.index, tag)
                    if entry:
                        payload, _exchange, queue = loads(entry)
                        payload.setdefault("headers", {})["redelivered"] = True
                        pipe.rpush(queue, dumps(payload))
                        restored += 1
                    pipe.execute()
                except redis.WatchError:
                    continue
        return restored
