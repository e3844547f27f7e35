"""The bytes each node may send per minute on the snapshot queues (FABRIC_NODE_MAX_BYTES_PER_MINUTE), and each
fabric collector on the sweeps queue (FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE).

A host sends one snapshot of 10-100 kB per poll. One that sends many more, or much larger ones (within
the message cap), would take the consumer's time from every other node: past its budget its messages
are dropped once their signature is checked, before they are decoded (a flood costs an HMAC a message,
not a parse), logged (at most once a minute per node), counted, and the node row says why (its page,
/healthz).

A token bucket per node: a minute's budget, refilled continuously, so a node may send a burst of up
to a minute's worth (an agent catching up after a broker outage) but not more on average. Kept in the
consumer's memory: each node's snapshots reach one consumer (names.snapshot_shard). The counts reach the
node rows after each batch, one UPDATE per node refused since the last.
"""

from __future__ import annotations

import logging
import time

from django.db.models import F
from django.utils import timezone

from fabricweb.inventory.models import Node

from .messages import Dropped

log = logging.getLogger("fabricweb.telemetry.intake.consumer")

NOTE_EVERY_S = 60.0  # a node refused over and over is logged and written this often
MAX_NODES = 100_000  # bounds the memory a stream of made-up names can take (unsigned snapshots only)


class OverBudget(Dropped):
    """A message of a node (or collector) past its bytes a minute: dropped, counted on its row."""


class NodeSpend:
    """The budgets of one kind of sender: hosts (FABRIC_NODE_MAX_BYTES_PER_MINUTE) or fabric collectors
    (FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE), `setting` naming which in the reason."""

    def __init__(self, per_minute: int, kind: str = Node.Kind.HOST, setting: str = "FABRIC_NODE_MAX_BYTES_PER_MINUTE"):
        self.per_minute, self.kind, self.setting = per_minute, kind, setting
        self._buckets: dict[str, tuple[float, float]] = {}  # node -> (bytes left, when)
        self._noted: dict[str, float] = {}  # node -> when its refusal was last logged and written
        self._unwritten: dict[str, int] = {}  # node -> refusals not yet added to its row
        self._sizes: dict[str, int] = {}  # node -> the size of its last message refused

    def allow(self, node: str, size: int) -> bool:
        """Whether `node` may send `size` more bytes now; if so, they are spent."""
        now = time.monotonic()
        left, then = self._buckets.get(node, (float(self.per_minute), now))
        left = min(float(self.per_minute), left + (now - then) * self.per_minute / 60.0)
        if size > left:
            self._buckets[node] = (left, now)
            return False
        if node not in self._buckets and len(self._buckets) >= MAX_NODES:
            self._buckets.clear()  # a flood of names: everyone starts with a full minute again
            self._noted.clear()
            self._unwritten.clear()
            self._sizes.clear()
        self._buckets[node] = (left - size, now)
        return True

    def admit(self, node: str, size: int) -> None:
        """Spend `size` bytes of `node`'s budget, or count the refusal and raise OverBudget."""
        if not self.allow(node, size):
            self.refuse(node, size)
            raise OverBudget(f"{node} {self._reason(node)}")

    def refuse(self, node: str, size: int) -> None:
        """Count a message of `node` dropped over its budget; logged at once, at most once a minute per node."""
        now = time.monotonic()
        self._unwritten[node] = self._unwritten.get(node, 0) + 1
        self._sizes[node] = size
        if now - self._noted.get(node, -NOTE_EVERY_S) >= NOTE_EVERY_S:
            self._noted[node] = now
            log.warning("ingest: %s %s", node, self._reason(node))

    def write(self) -> None:
        """Add the refusals counted so far to their nodes' rows, with the reason (after the consumer stored its
        batch: a node new in that batch has its row by then). A node not stored yet keeps its count for later.
        Each row's ingest token is cleared with it: the ingest process holding the node's row (rowcache.py) reads
        it afresh at its next poll, whose write would otherwise put back the count and time it held."""
        for node, count in list(self._unwritten.items()):
            written = Node.objects.filter(name=node, kind=self.kind).update(
                refused_reason=self._reason(node),
                refused_at=timezone.now(),
                refused_snapshots=F("refused_snapshots") + count,
                ingest_token=None,
            )
            if written:
                del self._unwritten[node]

    def _reason(self, node: str) -> str:
        return (
            f"sent more than its {self.per_minute} bytes a minute ({self.setting}): "
            f"messages of {self._sizes[node]} bytes dropped"
        )
