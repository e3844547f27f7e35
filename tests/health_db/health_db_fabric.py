"""A simulated fabric ingested poll by poll through the real ingest path, and what health made of it."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from collectors import read_host, to_dict
from collectors.keptdevices import KeptDevices
from collectors.sim import Fabric
from fabricweb.health.models import Event
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEP = 10.0  # s, FABRIC_POLL_INTERVAL's default


class SimFabric:
    """`nodes` simulated nodes; each poll steps the simulator and ingests one snapshot per node, as the
    node workers' Celery messages do (or all in one batch). A node whose tree vanished sends nothing:
    its worker went with it. `silent` nodes send nothing either (a dead worker on a live node)."""

    def __init__(
        self, out, nodes: int = 6, seed: int = 0, faults: tuple[str, ...] = (), layout: tuple[str, ...] = ()
    ) -> None:
        self.out = str(out)
        self.sim = Fabric.create(self.out, nodes, seed=seed, layout_faults=layout)  # layout: NODE:dgx, NODE:misbuilt
        if faults:
            self.sim.add_fault(*faults)
        self.nodes = [n.name for n in self.sim.layout.nodes]
        self.kinds = {n.name: n.kind for n in self.sim.layout.nodes}
        self.silent: set[str] = set()
        # With a poll ledger (fabricweb/pollledger.py), each poll is dispatched first, as beat does: a node that
        # does not answer holds its poll in its queue, and the next dispatch counts it missed.
        self.ledger = None
        self.holding: set[str] = set()
        # Every warning or critical event open at the end of some poll: "key" -> its worst severity seen.
        self.alarms: dict[str, str] = {}
        # What of a device stays put while it is registered is read once, as the node agent's Poller reads it.
        self.kept = KeptDevices()

    @property
    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.sim.clock)

    def node_of(self, kind: str) -> str:
        return next(n for n in self.nodes if self.kinds[n] == kind)

    def snapshot(self, node: str) -> dict:
        root = os.path.join(self.out, node)
        return to_dict(read_host(root, host=node, use_verbs=False, now=self.now.timestamp(), kept=self.kept))

    def answering(self) -> list[str]:
        return [n for n in self.nodes if n not in self.silent and os.path.isdir(os.path.join(self.out, n, "class"))]

    def poll(self, batch: bool = False) -> None:
        if self.ledger is not None:  # beat's dispatch: a node still holding its last poll is sent none
            waiting = [n for n in self.nodes if n in self.holding]
            taken = [n for n in self.nodes if n not in self.holding]
            self.ledger.dispatched(self.now.timestamp(), STEP, taken, waiting)
        self.sim.step(STEP)
        answering = self.answering()
        self.holding = {n for n in self.nodes if n not in answering}
        snaps = [self.snapshot(n) for n in answering]
        if batch:
            assert not ingest_batch(snaps, now=self.now).rejected
        else:
            for snap in snaps:
                ingest_snapshot(snap, now=self.now)
        self.note_alarms()

    def note_alarms(self) -> None:
        for key, severity in Event.objects.filter(resolved_at__isnull=True).values_list("key", "severity"):
            if severity != Event.Severity.INFO and self.alarms.get(key) != Event.Severity.CRITICAL:
                self.alarms[key] = severity

    def polls(self, n: int, **kw) -> None:
        for _ in range(n):
            self.poll(**kw)

    def fault(self, *specs: str) -> None:
        self.sim.add_fault(*specs)

    def clear(self, *specs: str) -> None:
        self.sim.remove_fault(*specs)


def open_events() -> dict[str, Event]:
    return {e.key: e for e in Event.objects.filter(resolved_at__isnull=True)}
