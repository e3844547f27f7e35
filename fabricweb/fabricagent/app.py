"""The fabric collector's lean Celery app: Celery and the broker URL, no Django, nothing central.

It shares the queue and task names and the JSON-only message rules with the central app
(fabricweb/names.py), and is tuned for a process that sits on an IB host doing one thing every few
seconds (the node agent was such a worker too, before its own loop: fabricweb/agent/loop.py):
- one process (the solo pool): the sweep runs in the worker itself, under its own deadline;
- no remote control, gossip, mingle or heartbeat: thousands of node agents share the broker, and
  nothing to ask it;
- the broker connection blocks up to `broker_wait_s` in one BRPOP instead of waking every second,
  and each channel keeps one Redis client (transport.py) instead of building one per command.
"""

from __future__ import annotations

import logging

from celery import Celery
from celery.signals import after_setup_logger, worker_ready, worker_shutdown
from kombu import Exchange, Queue

from fabricweb.brokeracl import unacked_keys
from fabricweb.brokertls import celery_ssl_options
from fabricweb.names import MESSAGE_SETTINGS, PLAIN_BODIES, SWEEP, collector_queue, task_routes

from .config import FabricAgentConfig
from .tasks import FabricAgent

log = logging.getLogger(__name__)

# Celery logs every task received and done at INFO: two lines per poll into each node's journal.
PER_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace")

# Seconds between the broker transport's sweeps for this worker's unacknowledged messages
# (kombu's default: 10 s). The collector takes its sweeps without acknowledgement (poll_queues),
# so it holds none; no need to scan Redis that often.
UNACKED_SWEEP_S = 300


def poll_queues(names: list[str], queue_of) -> list[Queue]:
    """The queues of `names`' polls (queue_of(name) each), consumed without acknowledgement.

    A poll is worth nothing after its interval (beat sends it with `expires`, and the next one
    follows), so it is not kept in kombu's unacknowledged hash while it runs: half the Redis
    round trips of a poll (the MULTI/EXEC that stores it, the one that removes it at the ack).
    A collector killed mid-sweep loses that one; dispatch sends the next to an empty queue.
    The same exchange and binding as Celery's own queue of that name, so central sends as before.
    """
    return [Queue(name, Exchange(name, "direct"), routing_key=name, no_ack=True) for name in map(queue_of, names)]


def lean_app(name: str, broker_url: str, ca_file: str | None, broker_wait_s: float, queues: list[Queue],
             unacked: dict[str, str]) -> Celery:  # fmt: skip
    """The Celery app of a process that sits on an IB host: Celery and the broker URL, no Django, its own queues
    consumed without acknowledgement, its own unacked keys."""
    # fixups=[]: Celery would otherwise load Django whenever DJANGO_SETTINGS_MODULE is set.
    app = Celery(name, broker=broker_url, fixups=[], set_as_current=True)
    scheme = broker_url.partition("://")[0]
    app.conf.update(
        MESSAGE_SETTINGS,
        broker_transport="fabricweb.fabricagent.transport:Transport" if scheme in ("redis", "rediss") else None,
        task_routes=task_routes(),
        task_queues=queues or None,
        # rediss:// checks the broker's certificate (FABRIC_REDIS_CA_FILE), as the central processes do.
        broker_use_ssl=celery_ssl_options(broker_url, ca_file),
        worker_enable_remote_control=False,
        worker_hijack_root_logger=True,
        broker_transport_options={
            "polling_interval": broker_wait_s,
            "unacked_restore_interval": UNACKED_SWEEP_S,
            # Polls are sent without a priority: one list per queue to wait on, not kombu's four
            # (node.<name> and three `\x06\x16<n>` variants), which a per-node ACL names exactly.
            "priority_steps": [0],
            # Its own unacknowledged-message keys, not the `unacked` hash every central worker shares.
            **unacked,
            **PLAIN_BODIES,
        },
    )

    @after_setup_logger.connect(weak=False)
    def quiet(logger, loglevel, **kwargs) -> None:
        if loglevel > logging.DEBUG:  # DEBUG shows them, to follow each poll
            for logger_name in PER_TASK_LOGGERS:
                logging.getLogger(logger_name).setLevel(logging.WARNING)

    return app


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
