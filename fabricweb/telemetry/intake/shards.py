"""Several ingest consumers: which of the K snapshot queues each reads, and taking over a dead one's.

Agents send a node's snapshots to snapshots.<crc32(name) % K> (fabricweb/names.py), so all of
a node's polls wait on one queue. Each queue is read by one consumer at a time, which holds
a *lease* on it in Redis: that consumer keeps the node's rows in memory (rowcache) and
stores its polls in order. Leases are shared out evenly among the live consumers.

The fabric collectors' `sweeps` queue: read by the holder of queue 0, unless the sweeps are *apart*, as they are
where the site names its fabric collectors (FABRIC_COLLECTORS): then they have a lease of their own, number K,
and while other consumers run, its holder stores the sweeps and nothing else. A counters sweep costs a consumer
about what all the hosts' polls do (at the 100,000-port bench 64,000 switch ports at ~70 µs a port-sample,
32,000 host ports at ~150: BENCHMARKS.md), and tied to queue 0 it left one of two consumers with the sweep and
half the hosts and the other nearly idle. A free sweeps lease goes to the live consumer holding the fewest
snapshot queues, which then gives those up to the others.

Redis keys (the broker's database):

- `ingest.consumers`: sorted set, consumer id -> when its heartbeat runs out (ms, Redis's clock);
- `ingest.shard.<k>`: the id of the consumer holding queue k (no expiry: see below);
- `ingest.shard.<K>`: the id of the consumer holding the `sweeps` queue, when they are apart;
- `ingest.shards`: K (`K:sweeps` when the sweeps are apart), so consumers started with another K, or the
  other way of reading the sweeps, refuse to run beside the others;
- `ingest.taken.<id>#<n>.<queue>`: what consumer <id> took from a queue and has not acked (one
  reader per connection, numbered n: telemetry/intake/redisread.py), and `unacked.snapshots.<id>` and
  its index: the same in kombu's unacked hash (brokers other than plain redis://, one set per
  consumer instead of one shared).

A consumer beats every lease/3 s (`beat`, one Lua script: atomic); when others joined, it
stores what it holds, then gives up what is over its share (`give_up`). A consumer whose
heartbeat ran out is *dead*; whichever consumer sees it first puts the messages it held
unacked back at the head of their queues, then frees its leases and forgets it (`sweep`).
Leases do not expire on their own, so a queue is taken over only after its dead holder's
messages went back first: the new holder stores those polls before the ones that followed
them, none is stale, none lost. A consumer only stalled (not
dead) past its lease may still commit what it held: that snapshot is then stored twice,
and ingest is idempotent (the second is a duplicate): never counted twice.
"""

from __future__ import annotations

import os
import secrets
import socket

import redis
from kombu.utils.json import loads

from fabricweb.names import SNAPSHOT_QUEUE, SNAPSHOT_UNACKED_KEY, SWEEP_QUEUE, shard_queue

from .envelopes import mark_redelivered
from .redisread import give_back, taken_count, takers_of

CONSUMERS_KEY = "ingest.consumers"
SHARDS_KEY = "ingest.shards"
LEASE_PREFIX = "ingest.shard."


def new_consumer_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def unacked_keys(consumer_id: str) -> dict[str, str]:
    """kombu Redis transport options: where consumer `consumer_id` keeps its unacked messages."""
    return {
        "unacked_key": f"unacked.{SNAPSHOT_QUEUE}.{consumer_id}",
        "unacked_index_key": f"unacked_index.{SNAPSHOT_QUEUE}.{consumer_id}",
        "unacked_mutex_key": f"unacked_mutex.{SNAPSHOT_QUEUE}.{consumer_id}",
    }


def backlog(client: redis.Redis, shards: int) -> int:
    """Snapshots sent and not yet stored: waiting on any snapshot queue, or taken and not acked by any consumer."""
    queues = [SNAPSHOT_QUEUE, SWEEP_QUEUE] + ([shard_queue(k) for k in range(shards)] if shards > 1 else [])
    holders = [SNAPSHOT_UNACKED_KEY] + [
        unacked_keys(c.decode())["unacked_key"] for c in client.zrange(CONSUMERS_KEY, 0, -1)
    ]
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        pipe.llen(queue)
    for key in holders:
        pipe.hlen(key)
    return sum(pipe.execute()) + taken_count(client)


class ShardCountMismatch(RuntimeError):
    """Live consumers run with another number of shards: the nodes' hash would disagree."""


# KEYS: consumers, shards; ARGV: me, K, lease ms, lease key prefix, '1' to give up shards over the share, the
# layout (K or K:sweeps), '1' when the sweeps are apart (their lease is number K). Returns {leases held after
# this beat, dead consumer ids (to sweep), snapshot queues over the share still held}, or an error for another
# layout.
_BEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, k_count, lease, prefix = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local alive, count, others = {}, {}, 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
  alive[id] = true
  count[id] = 0
  if id ~= me then others = others + 1 end
end
local layout, apart = ARGV[6], ARGV[7] == '1'
local known = redis.call('GET', KEYS[2])
if known and known ~= layout and others > 0 then
  return redis.error_reply('SHARDS ' .. known)
end
redis.call('SET', KEYS[2], layout)
redis.call('ZADD', KEYS[1], now + lease, me)
alive[me] = true
count[me] = 0
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
local awaiting = {}
for _, id in ipairs(dead) do awaiting[id] = true end
local mine, free = {}, {}
for k = 0, k_count - 1 do
  local owner = redis.call('GET', prefix .. k)
  if owner == me then
    table.insert(mine, k)
  elseif owner and alive[owner] then
    count[owner] = count[owner] + 1
  elseif not (owner and awaiting[owner]) then
    table.insert(free, k)  -- never held, or by a consumer already forgotten
  end
end
count[me] = #mine
local n = others + 1
-- Apart, the sweeps' lease: kept by a live holder, else taken by the live consumer holding the fewest snapshot
-- queues (the lowest id among equals), not while a dead holder's messages are still to go back.
local sweeper = nil
if apart then
  local owner = redis.call('GET', prefix .. k_count)
  if owner and alive[owner] then
    sweeper = owner
  elseif not (owner and awaiting[owner]) then
    local best = nil
    for id, c in pairs(count) do
      if best == nil or c < count[best] or (c == count[best] and id < best) then best = id end
    end
    if best == me then
      redis.call('SET', prefix .. k_count, me)
      sweeper = me
    end
  end
end
-- The snapshot queues are shared by the consumers other than the sweeps' holder, while there are others.
local sharers = n
if sweeper and n > 1 then sharers = n - 1 end
local lo, hi = math.floor(k_count / sharers), math.ceil(k_count / sharers)
local needy = false
for id, c in pairs(count) do
  if id ~= me and id ~= sweeper and c < lo then needy = true end
end
local keep = hi
if needy then keep = lo end
if sweeper == me and n > 1 then keep = 0 end
local excess = 0
if ARGV[5] == '1' then
  while #mine > keep do
    redis.call('DEL', prefix .. table.remove(mine))
  end
else
  excess = math.max(0, #mine - keep)
end
local i = 1
while #mine < keep and i <= #free do
  redis.call('SET', prefix .. free[i], me)
  table.insert(mine, free[i])
  i = i + 1
end
if sweeper == me then table.insert(mine, k_count) end
return {mine, dead, excess}
"""


class ShardLeases:
    """One consumer's leases on the K snapshot queues (0..K-1), and on the sweeps (K) when they are apart."""

    def __init__(
        self,
        client: redis.Redis,
        shards: int,
        lease_s: float,
        consumer_id: str | None = None,
        *,
        sweeps_apart: bool = False,
    ) -> None:
        if shards < 2:
            raise ValueError("shards: leases are for 2 or more snapshot queues")
        self.client, self.shards, self.lease_s = client, shards, lease_s
        self.sweeps_apart = sweeps_apart
        self.id = consumer_id or new_consumer_id()
        self.held: tuple[int, ...] = ()
        self.over_share = False
        self._beat = client.register_script(_BEAT)

    def queues(self) -> list[str]:
        """The queues to read now: the leased ones; the holder of shard 0 also reads the unsharded `snapshots`
        (agents still configured with one shard, or older ones), and the fabric collectors' `sweeps` unless they
        are apart (then their lease's holder does)."""
        names = [shard_queue(k) for k in self.held if k < self.shards]
        unsharded = [SNAPSHOT_QUEUE] if 0 in self.held else []
        sweeps = (self.shards if self.sweeps_apart else 0) in self.held
        return [*unsharded, *names, *([SWEEP_QUEUE] if sweeps else [])]

    def beat(self) -> tuple[int, ...]:
        """Renew this consumer's heartbeat, sweep dead consumers, take free shards up to its share; the
        shards held now. `over_share` says whether it should give some up (`give_up`, nothing in hand)."""
        held, dead, over = self._run(give_up=False)
        swept = [d for d in (x.decode() for x in dead) if self.sweep(d)]
        if swept:  # their shards are free now: take this consumer's share of them at once
            held, _, over = self._run(give_up=False)
        self.held, self.over_share = tuple(sorted(int(k) for k in held)), over > 0
        return self.held

    def give_up(self) -> tuple[int, ...]:
        """Free the shards over this consumer's share. Only with nothing in hand: another consumer may
        read them at once."""
        held, _, _ = self._run(give_up=True)
        self.held, self.over_share = tuple(sorted(int(k) for k in held)), False
        return self.held

    def _run(self, give_up: bool) -> tuple[list, list, int]:
        try:
            return self._beat(
                keys=[CONSUMERS_KEY, SHARDS_KEY],
                args=[
                    self.id,
                    self.shards,
                    int(self.lease_s * 1000),
                    LEASE_PREFIX,
                    "1" if give_up else "0",
                    self.layout,
                    "1" if self.sweeps_apart else "0",
                ],
            )
        except redis.ResponseError as e:
            if "SHARDS" not in str(e):
                raise
            other, _, apart = str(e).split()[-1].partition(":")
            if other != str(self.shards):
                raise ShardCountMismatch(
                    f"live ingest consumers run with {other} shards, this one with {self.shards}: "
                    "stop them all to change FABRIC_INGEST_SHARDS"
                ) from None
            theirs = "apart (FABRIC_COLLECTORS set)" if apart else "with snapshot queue 0"
            raise ShardCountMismatch(
                f"live ingest consumers read the fabric collectors' sweeps {theirs}, this one does not: "
                "start every consumer with the same FABRIC_COLLECTORS (stop the older ones when upgrading)"
            ) from None

    @property
    def layout(self) -> str:
        """ingest.shards' value: K, and whether the sweeps are apart."""
        return f"{self.shards}:sweeps" if self.sweeps_apart else str(self.shards)

    def sweep(self, consumer_id: str, *, leaving: bool = False) -> bool:
        """Put a dead consumer's unacked messages back at the head of their queues, free its leases and
        forget it, all at once; False if it is alive after all, or another consumer swept it first.
        `leaving`: this consumer itself, stopping (its heartbeat need not have run out)."""
        keys = unacked_keys(consumer_id)
        leases = [f"{LEASE_PREFIX}{k}" for k in range(self.shards + 1)]  # (the sweeps' too)
        if not leaving and not self._dead(consumer_id, self.client):
            return False
        # What it took first: its queues are freed below only once that is back on them.
        for taker in takers_of(self.client, consumer_id):
            if give_back(self.client, taker) is None:
                return False
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(CONSUMERS_KEY, keys["unacked_key"], keys["unacked_index_key"], *leases)
                if not leaving and not self._dead(consumer_id, pipe):  # (again, watched)
                    return False
                held = pipe.hgetall(keys["unacked_key"])
                order = [t for t in pipe.zrange(keys["unacked_index_key"], 0, -1) if t in held]
                order += [t for t in held if t not in set(order)]
                owners = pipe.mget(leases)
                owned = [key for key, owner in zip(leases, owners, strict=True) if owner == consumer_id.encode()]
                pipe.multi()
                # BRPOP takes from the right: pushed newest first, the oldest is read next.
                for tag in reversed(order):
                    payload, _exchange, routing_key = loads(held[tag])
                    pipe.rpush(routing_key, mark_redelivered(payload))
                pipe.delete(keys["unacked_key"], keys["unacked_index_key"], *owned)
                pipe.zrem(CONSUMERS_KEY, consumer_id)
                pipe.execute()
            except redis.WatchError:
                return False
        return True

    @staticmethod
    def _dead(consumer_id: str, client: redis.Redis) -> bool:
        """Whether `consumer_id`'s heartbeat ran out, by Redis's clock (`client`: a watching pipeline too)."""
        seconds, micros = client.time()
        score = client.zscore(CONSUMERS_KEY, consumer_id)
        return score is not None and score <= seconds * 1000 + micros // 1000

    def leave(self) -> None:
        """Give up every lease now (stopping, nothing in hand): the others take the queues at their next beat."""
        self.sweep(self.id, leaving=True)
        self.held = ()
