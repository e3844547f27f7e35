"""The fabric collector's Celery app: the node agent's lean app (fabricweb/agent/app.py), its own queue."""

from __future__ import annotations

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from fabricweb.agent.app import lean_app, poll_queues
from fabricweb.brokeracl import unacked_keys
from fabricweb.names import SWEEP, collector_queue

from .config import FabricAgentConfig
from .tasks import FabricAgent


def create_app(config: FabricAgentConfig, port_factory=None) -> tuple[Celery, FabricAgent]:
    queue = collector_queue(config.collector)
    app = lean_app(
        "fabricweb-fabric",
        config.broker_url,
        config.ca_file,
        config.broker_wait_s,
        poll_queues([config.collector], collector_queue),
        unacked_keys(config.collector, queue),
    )
    agent = FabricAgent(app, config, **({"port_factory": port_factory} if port_factory else {}))

    @app.task(name=SWEEP)
    def sweep(collector: str, adapters: list[str] | None = None) -> dict:
        """Sweep the fabric and send the snapshot. Beat sends it with `expires` of one interval, and the node GUIDs
        of the channel adapters whose counters it reads too (`adapters`: those no host agent reads)."""
        return agent.sweep(collector, adapters)

    @worker_ready.connect(weak=False)
    def started(sender, **kwargs) -> None:
        agent.hello()

    @worker_shutdown.connect(weak=False)
    def stopping(sender, **kwargs) -> None:
        agent.stop()

    return app, agent
