"""One sweep of the fabric: discovery (nodes, ports, links), every switch port's counters (and those of the
channel adapters central names), and the switches' forwarding tables when they may have changed.

`Sweeper` keeps the last discovery, so a counters-only poll (`mode="counters"`) queries the
PMAs of the switches it found without walking the fabric again. A full sweep is what the
fabric collector sends by default; see docs/fabric.md for the figures of each.

The forwarding tables (collectors.mads.routes) are read in a full sweep when the topology (its
links and LIDs) differs from the one they were last read on, or `routes_interval` seconds have
passed since: the subnet manager reprograms them after a change, and rarely otherwise. Counters-only
polls never read them, so they cost what they cost before.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from . import mad
from .discover import Discovery
from .engine import Engine
from .model import FabricNode, FabricSweep
from .pma import Counters
from .routes import Routes

# The management classes a sweep queries: directed-route SMPs and the performance management agent.
CLASSES = ((mad.CLASS_SUBN_DIRECTED_ROUTE, 1), (mad.CLASS_PERFORMANCE, 1))


@dataclass(frozen=True, slots=True)
class SweepSettings:
    window: int = 64  # MADs in flight at once
    timeout_ms: int = 300  # per try
    retries: int = 2
    deadline_s: float = 30.0  # the whole sweep; what is not answered by then is an error


def open_port(ca: str | None = None, port: int = 0):
    """This host's management datagram port, registered for the classes a sweep sends."""
    from .umad import UmadPort  # ctypes and libibumad only when a real port is opened

    return UmadPort(ca, port, CLASSES)


class Sweeper:
    def __init__(
        self,
        port,
        collector: str | None = None,
        settings: SweepSettings | None = None,
        routes_interval: float | None = None,
    ) -> None:
        self.port = port
        self.collector = collector or socket.gethostname().split(".")[0]
        self.settings = settings or SweepSettings()
        self.nodes: list[FabricNode] = []  # the last discovery's
        self.local: tuple[int, int] | None = None
        self.routes_interval = routes_interval  # None: read the tables only when asked
        self.routes_topology: frozenset | None = None  # the topology the tables were last read on
        self.routes_read_at: float | None = None  # time.monotonic() of that read

    def routes_due(self, now: float) -> bool:
        """Whether a full sweep that just discovered self.nodes should also read the forwarding tables."""
        if self.routes_interval is None:
            return False
        if self.routes_read_at is None or now - self.routes_read_at >= self.routes_interval:
            return True
        return topology(self.nodes) != self.routes_topology

    def _engine(self) -> Engine:
        s = self.settings
        return Engine(self.port, window=s.window, timeout_ms=s.timeout_ms, retries=s.retries)

    def sweep(
        self, mode: str = "full", now: float | None = None, routes: bool | None = None, adapters=frozenset()
    ) -> FabricSweep:
        """A full sweep, or with mode "counters" the counters of the switches the last full sweep found.

        `adapters`: node GUIDs of the channel adapters whose ports' counters are read too (central names those
        no host agent reads); an adapter not reached is not read.

        A full sweep reads the forwarding tables too when `routes` is true, or when it is None and they
        are due (routes_due); a counters-only poll never does.
        """
        if mode not in ("full", "counters"):
            raise ValueError(f"mode {mode!r}: 'full' or 'counters'")
        if mode == "counters" and not self.nodes:
            mode = "full"  # nothing known yet to count
        started = time.monotonic()
        out = FabricSweep(self.collector, time.time() if now is None else now, mode=mode)
        deadline = started + self.settings.deadline_s
        queries = 0
        if mode == "full":
            engine = self._engine()
            discovery = Discovery(engine)
            discovery.start()
            engine.run(deadline)
            queries += engine.stats.sent
            self.nodes = sorted(discovery.nodes.values(), key=lambda n: n.guid)
            self.local = discovery.local
            out.errors.extend(discovery.errors)
            if routes or (routes is None and self.routes_due(time.monotonic())):
                queries += self._read_routes(deadline, out)
        else:
            for node in self.nodes:  # a counters-only poll sends the last discovery's nodes with new counters
                for port in node.ports.values():
                    port.counters = {}
        engine = self._engine()
        counters = Counters(engine)
        counters.query(
            [n for n in self.nodes if n.is_switch], [n for n in self.nodes if not n.is_switch and n.guid in adapters]
        )
        engine.run(deadline)
        queries += engine.stats.sent
        out.errors.extend(counters.errors)
        out.nodes = self.nodes
        out.local = self.local
        out.queries = queries
        out.duration_s = time.monotonic() - started
        return out

    def _read_routes(self, deadline: float, out: FabricSweep) -> int:
        switches = [n for n in self.nodes if n.is_switch]
        engine = self._engine()
        routes = Routes(engine)
        routes.query(switches)
        engine.run(deadline)
        routes.finish(switches)
        out.errors.extend(routes.errors)
        out.routes = True
        self.routes_topology = topology(self.nodes)
        self.routes_read_at = time.monotonic()
        return engine.stats.sent


def topology(nodes: list[FabricNode]) -> frozenset:
    """What the forwarding tables depend on: every link (both ends) and every LID with its LMC."""
    return frozenset(
        (node.guid, number, port.peer, port.lid, port.lmc) for node in nodes for number, port in node.ports.items()
    )
