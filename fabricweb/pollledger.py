"""The polls each node was sent and did not take: the one measure of staleness.

Dispatch (fabricweb.scheduling) sends a node its next poll only once the node has taken the
last one from its queue; a poll still queued a whole interval after it was sent is a poll the
node missed. The ledger counts those misses per node, in the broker's Redis beside the queues:

- `sent`: when the poll now in (or last taken from) each node's queue was sent (epoch seconds);
- `missed`: the polls in a row each node has not taken; back to nothing once it takes one;
- `missed_total`: every poll each node ever missed, a counter for /metrics;
- `sent:<node>`: when its last few polls were sent, for the node that takes its polls and sends
  nothing back (a read stuck past its deadline, snapshots refused): compared with the time ingest
  last stored one of its snapshots, while ingest is not behind.

Nothing here reads a clock against a node's last snapshot. A beat that starts late, stops or
restarts sends no poll, so no node misses one; ingest that is behind or paused does not touch
the queues the nodes take their polls from; a dispatch that runs late, or twice in a row,
counts a miss only against a poll that has waited a whole interval.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

SENT, MISSED, MISSED_TOTAL = "fabricweb:polls:sent", "fabricweb:polls:missed", "fabricweb:polls:missed_total"
SENT_TIMES = "fabricweb:polls:sent:{}"
KEPT_SENT_TIMES = 16  # polls remembered per node: more than any stale_after_polls a site would set
# A poll found still queued this soon after it was sent was not missed: the dispatch ran early or twice.
FULL_INTERVAL = 0.9


class PollLedger:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def dispatched(self, now: float, interval: float, taken: Iterable[str], waiting: Iterable[str]) -> None:
        """One dispatch at `now`: `taken` emptied their queue and are sent a poll now; `waiting` still hold one."""
        taken, waiting = list(taken), list(waiting)
        sent_at = dict(zip(waiting, self.client.hmget(SENT, waiting), strict=True)) if waiting else {}
        pipe = self.client.pipeline(transaction=True)
        if taken:
            pipe.hdel(MISSED, *taken)
            pipe.hset(SENT, mapping=dict.fromkeys(taken, repr(now)))
        for node in taken:
            pipe.lpush(SENT_TIMES.format(node), repr(now))
            pipe.ltrim(SENT_TIMES.format(node), 0, KEPT_SENT_TIMES - 1)
        for node in waiting:
            at = sent_at[node]
            if at is None:  # queued by an earlier ledger (or by hand): its wait starts now
                pipe.hset(SENT, node, repr(now))
            elif now - float(at) >= FULL_INTERVAL * interval:
                pipe.hincrby(MISSED, node, 1)
                pipe.hincrby(MISSED_TOTAL, node, 1)
                pipe.hset(SENT, node, repr(now))  # the next miss is a whole interval from this one
        pipe.execute()

    def missed(self) -> dict[str, int]:
        """Polls in a row each node has not taken, for the nodes that have missed any."""
        return {name.decode(): int(count) for name, count in self.client.hgetall(MISSED).items()}

    def sent_after(self, since: dict[str, float]) -> dict[str, int]:
        """How many of its last polls each node was sent after `since[node]` (epoch seconds)."""
        pipe = self.client.pipeline(transaction=False)
        for node in since:
            pipe.lrange(SENT_TIMES.format(node), 0, -1)
        return {
            node: sum(float(at) > since[node] for at in times)
            for node, times in zip(since, pipe.execute(), strict=True)
        }

    def missed_total(self) -> dict[str, int]:
        return {name.decode(): int(count) for name, count in self.client.hgetall(MISSED_TOTAL).items()}

    def forget(self, nodes: Iterable[str]) -> None:
        """Nodes deleted from the inventory: their counts go with them."""
        nodes = list(nodes)
        if nodes:
            pipe = self.client.pipeline(transaction=True)
            for key in (SENT, MISSED, MISSED_TOTAL):
                pipe.hdel(key, *nodes)
            pipe.delete(*(SENT_TIMES.format(node) for node in nodes))
            pipe.execute()
