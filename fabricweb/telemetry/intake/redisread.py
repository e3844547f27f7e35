"""Take a whole batch of snapshot messages from Redis in two round trips, ack a batch in one.

kombu's Redis transport delivers one message per BRPOP and keeps it in its unacked hash with
a pipeline of its own, then removes it at the ack with another: three round trips and two
pipelines per message, ~1-1.5 ms each on the test machine. Here a take asks the queues'
lengths, then *moves* up to N messages with `LMOVE` in one MULTI/EXEC from each queue to a
list of this reader's own, `ingest.taken.<taker>.<queue>`: a message is always on its queue or
on a taken list, never neither, and Redis copies nothing (a Lua script building kombu's
unacked entries spent ~55 µs of Redis's single core per message, ~20 to bring each into
Lua and ~18 to build its copy: BENCHMARKS.md, "Ingest, eighth round").

What a take reads is bounded twice: each message by its queue's cap (a node's snapshot queues take
node-sized messages, the `sweeps` queue sweep-sized ones: messages.py), read on a connection of that cap;
and the whole take by the batch's bytes (FABRIC_INGEST_BATCH_BYTES). The sizes of messages still on a
queue are not known before they are moved, so a take moves them in rounds, each of as many as would fit
were every one at the cap: N messages of (cap - 1) bytes cost one batch's bytes, never N caps, and the
rest wait for the next batch. With small messages a batch of 100 takes a few rounds (a MULTI each).

A taken list keeps the queue's order (oldest on the right, read first). Acks come after the
commit and are nearly always the oldest messages: they are removed by trimming the list's
oldest end, when the list still holds exactly what this reader took (its length says so),
or one by one by value (`LREM`) when it does not: a reader that stalled past its lease had
its lists given back by another consumer meanwhile (shards.sweep).

Takers are registered in `ingest.takers` (taker -> when last seen, epoch s) with the queues
they took from (`ingest.taken.<taker>`). A taker unseen for `redeliver_after` seconds (a
consumer killed, or one that lost its broker connection and started a new reader) has its
lists given back to the head of their queues by whichever consumer looks first
(`restore_older_than`); a dead sharded consumer's are given back at once by shards.sweep.
Messages a consumer of an earlier version left in kombu's unacked hash are still restored
from there. A message over the consumer's cap comes as cappedredis.Oversized (drained unread):
its place on the taken list gets a small tombstone, so it is acked, trimmed or given back by
value like any other, and snapshots_of drops it. Only for plain redis:// brokers, like telemetry/intake/broker.py.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque

import redis
from kombu.utils.json import loads

from fabricweb.cappedredis import Oversized, note_dropped
from fabricweb.names import BROKER_FULL, SWEEP_QUEUE

from .envelopes import TakenMessage, envelope, mark_redelivered, redelivered
from .messages import MAX_ENVELOPE_BYTES

log = logging.getLogger("fabricweb.telemetry.intake.consumer")

TAKERS_KEY = "ingest.takers"
TAKEN_PREFIX = "ingest.taken."
HEARTBEAT_EVERY_S = 1.0  # how often a reader with nothing to take still says it is alive
WARN_EVERY_S = 60.0

# KEYS[1]: a taken list; ARGV: the length it must have, how many of its oldest to drop.
# 1 when trimmed; 0 (nothing done) when its length says it no longer holds exactly what the reader took.
_TRIM = """
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('LTRIM', KEYS[1], 0, -1 - tonumber(ARGV[2]))
return 1
"""


# KEYS[1]: a taken list; ARGV: the length it must have, an index, what to set there. As _TRIM: nothing done
# when its length says it was given back meanwhile (give_back dropped the oversized message then).
_MARK = """
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('LSET', KEYS[1], tonumber(ARGV[2]), ARGV[3])
return 1
"""


def _tombstone(tag: str) -> bytes:
    """What stands on a taken list for an oversized message taken as `tag`: no JSON envelope, so a message
    dropped by its type if it is ever read again."""
    return f"oversized message taken as {tag}, drained unread".encode()


def taken_key(taker: str, queue: str) -> str:
    """The list of messages `taker` took from `queue` and has not acked."""
    return f"{TAKEN_PREFIX}{taker}.{queue}"


def taken_queues_key(taker: str) -> str:
    """The set of queues `taker` took messages from."""
    return f"{TAKEN_PREFIX}{taker}"


class BatchReader:
    """Reads snapshot queues for one consumer, as taker `taker` (unique per process and connection).

    `keys` are kombu's unacked keys of the consumer (where an earlier version kept its messages). `client`
    reads with the sweeps' cap (a sweep, giving back, everything but a node's messages); `narrow`, with a
    node message's cap, takes from the node snapshot queues (the same client when not given). A take reads at
    most `room_bytes` (batch_bytes by default): it moves messages in rounds of as many as are sure to fit
    at the node message's cap, so a batch of cap-sized messages costs no more than batch_bytes, and those
    past it wait on their queue. A sweep is taken alone, every other take while node messages wait."""

    def __init__(
        self,
        client: redis.Redis,
        keys: dict[str, str],
        taker: str,
        *,
        narrow: redis.Redis | None = None,
        batch_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        if batch_bytes < MAX_ENVELOPE_BYTES:
            raise ValueError(f"a batch must be able to hold one node message: {MAX_ENVELOPE_BYTES} bytes or more")
        self.client, self.narrow, self.taker = client, narrow or client, taker
        self.batch_bytes = batch_bytes
        self.unacked, self.index = keys["unacked_key"], keys["unacked_index_key"]
        # Per queue, what this reader took and has not yet trimmed, oldest first.
        self.held: dict[str, deque[TakenMessage]] = {}
        self.acks = 0  # acked since the last commit_acks
        self.held_bytes = 0  # of the messages in `held`: a take reads no more than batch_bytes less these
        self._tags = itertools.count(1)
        self._seen_at = 0.0
        self._sweep_next = False  # node messages were taken last: a waiting sweep goes next
        self._warned_at = -WARN_EVERY_S  # when it last said the broker is at its maxmemory

    def take(self, queues: list[str], most: int, room_bytes: int | None = None) -> list[TakenMessage]:
        """Up to `most` messages and `room_bytes` bytes, from the first queues first; each on its queue or
        taken, never neither."""
        room_bytes = min(self.batch_bytes if room_bytes is None else room_bytes, self.batch_bytes - self.held_bytes)
        if most <= 0 or not queues:
            self._heartbeat()
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                pipe.llen(queue)
            waiting = {q: n for q, n in zip(queues, pipe.execute(), strict=True) if n}
        sweeps = waiting.pop(SWEEP_QUEUE, 0)
        if sweeps and (self._sweep_next or not waiting):
            self._sweep_next = False
            return self._move(self.client, [(SWEEP_QUEUE, 1)])
        out: list[TakenMessage] = []
        while most > 0 and waiting:
            fits = min(most, room_bytes // MAX_ENVELOPE_BYTES)  # as many as surely fit, each at most the cap
            if fits < 1:
                break
            plan = []
            for queue, length in waiting.items():
                if fits <= 0:
                    break
                plan.append((queue, min(length, fits)))
                fits -= plan[-1][1]
            taken = self._move(self.narrow, plan)
            out.extend(taken)
            room_bytes -= sum(len(m.raw) for m in taken)
            most -= sum(count for _, count in plan)
            for queue, count in plan:
                waiting[queue] -= count
            waiting = {q: n for q, n in waiting.items() if n > 0}
        if not out:
            self._heartbeat()
        self._sweep_next = bool(out)
        return out

    def _move(self, client: redis.Redis, plan: list[tuple[str, int]]) -> list[TakenMessage]:
        """Move `plan`'s (queue, how many) onto this taker's lists in one MULTI/EXEC, read on `client`; with the
        broker at its maxmemory (which refuses LMOVE), pop them instead (_pop)."""
        now = time.time()
        try:
            with client.pipeline() as pipe:  # MULTI: registered and moved together
                pipe.zadd(TAKERS_KEY, {self.taker: now})
                pipe.sadd(taken_queues_key(self.taker), *(queue for queue, _ in plan))
                for queue, count in plan:
                    key = taken_key(self.taker, queue)
                    for _ in range(count):
                        pipe.lmove(queue, key, "RIGHT", "LEFT")
                moved = pipe.execute()[2:]
        except redis.ResponseError as e:
            if BROKER_FULL not in str(e):  # (LMOVE is refused at maxmemory; RPOP is not)
                raise
            return self._pop(client, plan)
        self._seen_at = now
        out, at, oversized = [], 0, []
        for queue, count in plan:
            held = self.held.setdefault(queue, deque())
            for raw in moved[at : at + count]:
                message = self._message(queue, raw)
                if message is None:  # taken meanwhile by another reader of an unsharded queue
                    continue
                if message.oversized is not None:
                    oversized.append((queue, len(held)))
                held.append(message)
                self.held_bytes += len(message.raw)
                out.append(message)
            at += count
        if oversized:
            self._mark(oversized)
        return out

    def _pop(self, client: redis.Redis, plan: list[tuple[str, int]]) -> list[TakenMessage]:
        """At the broker's maxmemory: RPOP `plan`'s messages (Redis runs it at the limit, being what frees
        memory), kept on no taken list. A flood is shed the faster (a sender over its budget costs an HMAC a
        message), at a price: a consumer killed before it stores these loses them, the polls of one batch."""
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "ingest: the broker is at its maxmemory: snapshots are popped, not kept for redelivery, until it is"
                " under it again (its memory on /healthz; a node flooding it is refused over its budget)"
            )
        with client.pipeline(transaction=False) as pipe:
            for queue, count in plan:
                pipe.rpop(queue, count)
            popped = pipe.execute()
        self._heartbeat()
        out = []
        for (queue, _), raws in zip(plan, popped, strict=True):
            for raw in raws or ():
                message = self._message(queue, raw)
                message.tracked = False
                out.append(message)
        return out

    def _message(self, queue: str, raw) -> TakenMessage | None:
        if raw is None:
            return None
        tag, size = f"{self.taker}.{next(self._tags)}", None
        if isinstance(raw, Oversized):  # drained unread (cappedredis): dropped by snapshots_of
            raw, size, payload = _tombstone(tag), raw.size, {}
        else:
            try:
                payload = envelope(raw)
            except ValueError:
                payload = {"properties": {}, "content-type": "invalid", "body": b""}  # dropped by its type
        message = TakenMessage(self, tag, queue, raw, payload if isinstance(payload, dict) else {})
        message.oversized = size
        return message

    def _mark(self, oversized: list[tuple[str, int]]) -> None:
        """Put each oversized message's tombstone in its place on its taken list, so that acks, requeues and
        give_back handle it by value like any other (its bytes are not here to name it)."""
        with self.client.pipeline(transaction=False) as pipe:
            for queue, index in oversized:
                held = self.held[queue]
                # The list holds what `held` does, newest on the left: held[i] is at len(held) - 1 - i.
                pipe.eval(_MARK, 1, taken_key(self.taker, queue), len(held), len(held) - 1 - index, held[index].raw)
            pipe.execute()

    def _heartbeat(self) -> None:
        """Say this reader is alive while it takes nothing (a batch in hand, the database away)."""
        now = time.time()
        if now - self._seen_at >= HEARTBEAT_EVERY_S:
            self.client.zadd(TAKERS_KEY, {self.taker: now})
            self._seen_at = now

    def commit_acks(self) -> None:
        """Remove every message acked since the last call from its taken list: one round trip.

        Only the acked messages at the old end are removed (a message acked before older ones waits for
        them), by trimming the list if its length is still what this reader holds. If it is not, the
        list was given back while this reader stalled and holds at most what it took since: the acked
        messages are then removed by value, so nothing taken since is trimmed."""
        if not self.acks:
            return
        self.acks = 0
        acked = []  # (queue, its taken list, how many of its oldest are acked)
        for queue, held in self.held.items():
            oldest = 0
            while oldest < len(held) and held[oldest].done:
                oldest += 1
            if oldest:
                acked.append((queue, held, oldest))
        if not acked:
            return
        with self.client.pipeline(transaction=False) as pipe:
            for queue, held, oldest in acked:
                pipe.eval(_TRIM, 1, taken_key(self.taker, queue), len(held), oldest)
            trimmed = pipe.execute()
        if not all(trimmed):
            with self.client.pipeline(transaction=False) as pipe:
                for (queue, held, oldest), done in zip(acked, trimmed, strict=True):
                    for i in range(0 if done else oldest):
                        pipe.lrem(taken_key(self.taker, queue), -1, held[i].raw)
                pipe.execute()
        for _queue, held, oldest in acked:
            for _ in range(oldest):
                self.held_bytes -= len(held.popleft().raw)

    def requeue(self, message: TakenMessage) -> None:
        """Back at the end of its queue (as kombu's requeue: read after what waits there now)."""
        if not message.tracked:  # popped at maxmemory: on no taken list
            self.client.lpush(message.queue, message.raw)
            return
        with self.client.pipeline() as pipe:  # MULTI: on the queue again and off the taken list together
            pipe.lrem(taken_key(self.taker, message.queue), -1, message.raw)
            pipe.lpush(message.queue, message.raw).execute()
        self.held[message.queue].remove(message)
        self.held_bytes -= len(message.raw)

    def restore_older_than(self, seconds: float) -> int:
        """Give back the messages of takers unseen for `seconds` (a consumer killed holding them, or this one's
        reader before it reconnected), and those kombu's unacked hash held as long; how many."""
        self._heartbeat()
        now = time.time()
        restored = 0
        for taker in self.client.zrangebyscore(TAKERS_KEY, "-inf", now - seconds):
            taker = taker.decode()
            if taker != self.taker:
                restored += give_back(self.client, taker) or 0
        return restored + self._restore_unacked(now - seconds)

    def _restore_unacked(self, ceil: float) -> int:
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
                        pipe.rpush(queue, mark_redelivered(payload))
                        restored += 1
                    pipe.execute()
                except redis.WatchError:
                    continue
        return restored

    def leave(self) -> None:
        """Stopping: give back anything still taken (nothing, after a last flush) and forget this taker."""
        give_back(self.client, self.taker)


def give_back(client: redis.Redis, taker: str) -> int | None:
    """Put what `taker` took back at the head of its queues (read next, oldest first, marked redelivered)
    and forget the taker, at once; how many, or None if it took more meanwhile (alive after all)."""
    queues_key = taken_queues_key(taker)
    with client.pipeline() as pipe:
        try:
            pipe.watch(queues_key)
            queues = sorted(q.decode() for q in pipe.smembers(queues_key))
            keys = [taken_key(taker, q) for q in queues]
            if keys:
                pipe.watch(*keys)
            held = [pipe.lrange(key, 0, -1) for key in keys]
            pipe.multi()
            for queue, messages in zip(queues, held, strict=True):
                messages = _readable(queue, messages)
                if messages:  # (oldest on the right, as on the queue: pushed in this order it is read first)
                    pipe.rpush(queue, *map(redelivered, messages))
            pipe.delete(queues_key, *keys)
            pipe.zrem(TAKERS_KEY, taker)
            pipe.execute()
        except redis.WatchError:
            return None
    return sum(map(len, held))


def _readable(queue: str, messages: list) -> list[bytes]:
    """`messages` less those drained unread as oversized (a reader died before marking them): dropped here."""
    for message in messages:
        if isinstance(message, Oversized):
            note_dropped(queue, message.size, what="while giving back ")
    return [m for m in messages if not isinstance(m, Oversized)]


def takers_of(client: redis.Redis, consumer_id: str) -> list[str]:
    """The takers (readers, one per connection) of ingest consumer `consumer_id`."""
    prefix = f"{consumer_id}#"
    return [t for t in (x.decode() for x in client.zrange(TAKERS_KEY, 0, -1)) if t.startswith(prefix)]


def taken_count(client: redis.Redis) -> int:
    """Messages taken by any reader and not yet acked."""
    takers = [t.decode() for t in client.zrange(TAKERS_KEY, 0, -1)]
    pipe = client.pipeline(transaction=False)
    for taker in takers:
        pipe.smembers(taken_queues_key(taker))
    keys = [taken_key(t, q.decode()) for t, queues in zip(takers, pipe.execute(), strict=True) for q in queues]
    for key in keys:
        pipe.llen(key)
    return sum(pipe.execute())
