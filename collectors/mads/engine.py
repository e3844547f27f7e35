"""Many MADs in flight from one process: a window of outstanding queries, matched to replies by TID.

A sweep is tens of thousands of queries. Sent one at a time, each waits a round trip
(perfquery's way, and why a process-per-port exporter takes seconds per switch); here up to
`window` are outstanding at once, a reply frees a slot for the next, and a query that times
out is sent again (with a new TID) up to `retries` times before its callback hears why it
failed. One switch that never answers costs its own queries' timeouts, run alongside the rest.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .mad import MadError, Reply, read_reply

# What a query's callback receives: the reply, or None and the reason it failed.
Callback = Callable[[Reply | None, str | None], None]

TIMEOUT_STATUS = 110  # ETIMEDOUT in a received umad's status: the kernel gave up waiting for the reply


@dataclass(slots=True)
class Query:
    mgmt_class: int
    build: Callable[[int], bytes]  # TID -> the MAD
    lid: int
    qp: int
    qkey: int
    callback: Callback
    what: str  # for error messages: "NodeInfo via leaf01 port 3"
    # Queries to one target: once one of them goes unanswered through every try, the rest of the group
    # not yet sent fail at once instead of each waiting out its own timeouts.
    group: object = None
    tries: int = 0


@dataclass(slots=True)
class EngineStats:
    sent: int = 0
    answered: int = 0
    retried: int = 0
    failed: int = 0
    seconds: float = 0.0
    by_reason: dict[str, int] = field(default_factory=dict)


class Engine:
    """Runs queries against a port (collectors.mads.umad.UmadPort, or anything with its send/recv)."""

    def __init__(self, port, *, window: int = 64, timeout_ms: int = 300, retries: int = 2) -> None:
        self.port = port
        self.window = max(1, window)
        self.timeout_s = timeout_ms / 1000
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.pending: deque[Query] = deque()
        self.outstanding: dict[int, tuple[Query, float]] = {}  # TID -> (query, deadline)
        self.order: deque[tuple[float, int]] = deque()  # (deadline, TID) in send order: deadlines only grow
        self.next_tid = 1
        self.silent: dict[object, str] = {}  # group -> why its queries are no longer sent
        self.stats = EngineStats()

    def submit(self, query: Query) -> None:
        self.pending.append(query)

    def run(self, deadline: float | None = None) -> None:
        """Send and receive until every submitted query (and those their callbacks submit) has ended.

        Past `deadline` (time.monotonic()) the queries not yet answered fail with "sweep deadline passed".
        """
        started = time.monotonic()
        port, outstanding = self.port, self.outstanding
        while self.pending or outstanding:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._abandon("sweep deadline passed")
                break
            while self.pending and len(outstanding) < self.window:
                self._send(self.pending.popleft(), now)
            if not outstanding:
                continue
            wait = max(0.0, self.order[0][0] - now) if self.order else self.timeout_s
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - now))
            received = port.recv(max(1, int(wait * 1000)) if wait > 0 else 0)
            if received is not None:
                self._received(*received)
            self._expire(time.monotonic())
        self.stats.seconds += time.monotonic() - started

    def _send(self, query: Query, now: float) -> None:
        if query.group is not None and query.group in self.silent:
            self._fail(query, f"not sent: {self.silent[query.group]}")
            return
        tid = self.next_tid
        self.next_tid = tid + 1 if tid < 0xFFFFFFFF else 1
        query.tries += 1
        self.port.send(query.mgmt_class, query.build(tid), query.lid, query.qp, query.qkey, self.timeout_ms)
        expires = now + self.timeout_s
        self.outstanding[tid] = (query, expires)
        self.order.append((expires, tid))
        self.stats.sent += 1

    def _received(self, mad: bytes, status: int) -> None:
        tid = int.from_bytes(mad[12:16])
        entry = self.outstanding.pop(tid, None)
        if entry is None:
            return  # a late reply to a query already retried or given up: ignore it
        query = entry[0]
        if status == TIMEOUT_STATUS:
            self._retry_or_fail(query, "no answer (timeout)")
            return
        try:
            reply = read_reply(mad)
        except MadError as e:
            self._fail(query, str(e))
            return
        self.stats.answered += 1
        query.callback(reply, None)

    def _expire(self, now: float) -> None:
        order, outstanding = self.order, self.outstanding
        while order and order[0][0] <= now:
            _, tid = order.popleft()
            entry = outstanding.pop(tid, None)
            if entry is not None:
                self._retry_or_fail(entry[0], "no answer (timeout)")
        if not outstanding:
            order.clear()

    def _retry_or_fail(self, query: Query, reason: str) -> None:
        if query.tries <= self.retries:
            self.stats.retried += 1
            self.pending.appendleft(query)
        else:
            reason = f"{reason} after {query.tries} {'try' if query.tries == 1 else 'tries'}"
            if query.group is not None:
                self.silent.setdefault(query.group, f"{query.what}: {reason}")
            self._fail(query, reason)

    def _fail(self, query: Query, reason: str) -> None:
        self.stats.failed += 1
        key = reason.split(":", 1)[0].split(" (", 1)[0]
        self.stats.by_reason[key] = self.stats.by_reason.get(key, 0) + 1
        query.callback(None, reason)

    def _abandon(self, reason: str) -> None:
        queries = [q for q, _ in self.outstanding.values()] + list(self.pending)
        self.outstanding.clear()
        self.order.clear()
        self.pending.clear()
        for query in queries:
            self._fail(query, reason)
