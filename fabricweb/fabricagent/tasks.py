"""The fabric collector's work: `sweep`, sent by central beat to fabric.<name>, and the hello at start.

One open management datagram port for the process's life (collectors/mads/umad.py), one
Sweeper keeping the last discovery (so counters-only polls need no walk), and the snapshot sent
signed with the collector's own key to the snapshots queue ingest reads. No database, nothing central.
"""

from __future__ import annotations

import logging
import re
import threading
import time

from celery import Celery

from collectors.mads.snapshot import to_dict
from collectors.mads.sweep import Sweeper, SweepSettings, open_port
from fabricweb.names import INGEST_FABRIC, SWEEP_QUEUE
from fabricweb.nodeauth import COLLECTOR, signed_kwargs

from .config import FabricAgentConfig

log = logging.getLogger(__name__)
GUID = re.compile(r"0x[0-9a-f]{16}")


class FabricAgent:
    def __init__(self, app: Celery, config: FabricAgentConfig, port_factory=open_port) -> None:
        self.app = app
        self.config = config
        self._open = port_factory
        self._port = None
        self._sweeper: Sweeper | None = None
        self._sweeps = 0
        self._lock = threading.Lock()

    def _ready_sweeper(self) -> Sweeper:
        if self._sweeper is None:
            c = self.config
            self._port = self._open(c.ca, c.port)
            settings = SweepSettings(c.window, c.timeout_ms, c.retries, c.deadline_s)
            self._sweeper = Sweeper(self._port, c.collector, settings, routes_interval=c.routes_interval_s)
        return self._sweeper

    def deliver(self, snap: dict) -> None:
        queue = SWEEP_QUEUE
        what = f"fabric snapshot of {self.config.collector}"
        if self.config.key is None:
            self.app.send_task(INGEST_FABRIC, args=[snap], queue=queue, argsrepr=f"[{what}]")
            return
        signed = signed_kwargs(self.config.key, snap, COLLECTOR)
        self.app.send_task(INGEST_FABRIC, kwargs=signed, queue=queue, argsrepr="()", kwargsrepr=f"{{signed {what}}}")

    def sweep(self, collector: str, adapters: list[str] | None = None) -> dict:
        """Sweep and send: a full sweep every `full_every` polls, the switches' counters in between; the counters
        of the channel adapters `adapters` (node GUIDs, 0x...: central's choice, docs/fabric.md) with them."""
        if collector != self.config.collector:
            raise ValueError(f"this collector is {self.config.collector}, not {collector}")
        cas = frozenset(int(guid, 16) for guid in adapters or () if isinstance(guid, str) and GUID.fullmatch(guid))
        with self._lock:  # the hello and a poll must not share the port at once
            sweeper = self._ready_sweeper()
            mode = "full" if self._sweeps % self.config.full_every == 0 else "counters"
            self._sweeps += 1
            started = time.monotonic()
            sweep = sweeper.sweep(mode, adapters=cas)
        snap = to_dict(sweep)
        self.deliver(snap)
        summary = {
            "mode": sweep.mode,
            "nodes": len(sweep.nodes),
            "errors": len(sweep.errors),
            "queries": sweep.queries,
            "routes": sweep.routes,
            "adapters": len(cas),
            "seconds": round(time.monotonic() - started, 3),
        }
        if sweep.errors:
            log.warning("sweep: %d errors, the first: %s: %s", len(sweep.errors), sweep.errors[0].path,
                        sweep.errors[0].reason)  # fmt: skip
        return summary

    def hello(self) -> None:
        """The first sweep: it registers the collector centrally (a Node of kind collector), so beat polls it."""
        try:
            done = self.sweep(self.config.collector)
            log.info("hello: sent the first sweep of %s: %s", self.config.collector, done)
        except Exception:
            log.exception("hello: the first sweep of %s failed", self.config.collector)
        if self.config.key is None:
            log.warning(
                "sweeps are sent unsigned (no FABRIC_COLLECTOR_KEY): refused where FABRIC_NODE_AUTH is required"
            )

    def stop(self) -> None:
        if self._port is not None:
            self._port.close()
            self._port = None
