"""The rows of recently ingested nodes, kept in the ingest process between batches.

Loading a node's devices and ports (with their raw counters and `recent` ring as JSON)
was the largest single cost of ingest. An ingest process that stored a node's last
snapshot already holds those rows, exactly as it wrote them, so it may reuse them,
provided nobody else wrote them since. That is what `Node.ingest_token` tells:

- ingest writes a new random token with every node it stores (store.write);
- any other write of a node's devices or ports through the ORM (the admin, accept
  baseline, a delete) clears the token (`on_row_changed`, connected in TelemetryConfig), and so does
  a write of the node row's fields ingest writes back (intake/spend.py's count of refused messages);
- ingest takes the node row's lock before anything else (store.load_nodes), so the
  token it reads cannot change under it; rows are reused only when the token read
  there is the one this process wrote last.

Rows are taken out of the cache for the length of a batch and put back only after its
transaction committed (`keep`): a rolled-back batch leaves nothing of itself here.
Inside an enclosing transaction (tests run in one) the batch's block ends at a savepoint, and its
rows are kept all the same: every node a batch wrote carries a new token, so if the enclosing
transaction rolls back later, the token read at the next batch is the older one and the rows are
read afresh. Nothing else depends on the commit.
A writer that bypasses the ORM (queryset.update, raw SQL) on devices or ports goes through
fabricweb/inventory/rowwrites.py, which clears it (tests/test_row_writes.py holds everyone to that).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .apply import NodeRows

# Measured ~18 kB per 4-port node (rows and quiet-port judgements; tracemalloc over
# 1,000 fixture nodes): 50,000 nodes (200,000 ports) ~0.9 GB, the bound on one ingest process. An hour into a
# busy fabric each port's ring of waits, held as columns, adds ~5 kB with the memo's running sums (docs/scale.md,
# "Where one machine ends"): ~1.9 GB then.
MAX_NODES = 50_000


def new_token() -> int:
    return secrets.randbits(62) + 1  # never 0 and never NULL: both would look like "no token"


class RowCache:
    def __init__(self, limit: int = MAX_NODES) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._rows: dict[str, NodeRows] = {}
        self.hits = self.misses = 0

    def take(self, name: str, node_pk: int, token: int | None) -> NodeRows | None:
        """This node's rows if this process holds them as of `token`; removed from the cache either way."""
        with self._lock:
            rows = self._rows.pop(name, None)
        if rows is not None and token is not None and rows.node.pk == node_pk and rows.node.ingest_token == token:
            self.hits += 1
            return rows
        self.misses += 1
        return None

    def keep(self, rows: Iterable[NodeRows]) -> None:
        """Hold these rows for the next batch (call after their transaction committed)."""
        with self._lock:
            for r in rows:
                if r.node.pk is None or r.node.ingest_token is None:
                    continue
                self._rows.pop(r.node.name, None)  # re-inserted last: the oldest go first when full
                self._rows[r.node.name] = r
            while len(self._rows) > self.limit:
                del self._rows[next(iter(self._rows))]

    def drop(self, names: Iterable[str] | None = None) -> None:
        with self._lock:
            if names is None:
                self._rows.clear()
            else:
                for name in names:
                    self._rows.pop(name, None)

    def forget(self) -> None:
        """Hold nothing and count afresh (the tests' conftest, after each test)."""
        self.drop()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)


CACHE = RowCache()


def on_row_changed(sender, instance, **kwargs) -> None:
    """post_save / post_delete of a Device or Port (not ingest's own writes, which bypass the ORM)."""
    from fabricweb.inventory.models import Device, Port
    from fabricweb.inventory.rowwrites import invalidate

    if isinstance(instance, Port):
        device = Device.objects.filter(pk=instance.device_id).values_list("node_id", flat=True).first()
        invalidate([device] if device is not None else [])
    elif isinstance(instance, Device):
        invalidate([instance.node_id])
