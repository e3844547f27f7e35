"""What the fabric app hands to telemetry as it starts (fabricweb.fabric.apps), so telemetry never imports the layer
above it (tests/test_imports.py, the layer order; docs/architecture.md):

- `store_sweeps`: how a batch of fabric collectors' sweeps is stored (fabricweb.fabric.ingest.ingest_fabric_batch).
  The ingest consumer takes sweeps off the broker beside node snapshots and dispatches each batch by its kind;
- `yield_to_host`: what becomes of a switch that named itself after a host when that host reports (it takes
  another name: fabricweb.fabric.hostnames). Only the fabric app makes switch nodes;
- `read_adapters`: the node GUIDs of the channel adapters whose counters the fabric collectors read, sent with
  each sweep's poll by scheduling (fabricweb.fabric.adapters.to_read).

One object, filled once per process by AppConfig.ready(), read at every batch; nothing else writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricweb.inventory.models import Node

    from .ingest import BatchResult


@dataclass(slots=True)
class Handed:
    store_sweeps: Callable[[list], BatchResult] | None = None
    yield_to_host: Callable[[Node], str] | None = None
    read_adapters: Callable[[], list[str]] | None = None

    def adapters(self) -> list[str]:
        return self.read_adapters() if self.read_adapters is not None else []

    def sweeps(self, snapshots: list) -> BatchResult:
        if self.store_sweeps is None:
            raise RuntimeError("a fabric sweep arrived, and no app stores sweeps: is fabricweb.fabric installed?")
        return self.store_sweeps(snapshots)


HANDED = Handed()
