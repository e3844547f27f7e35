"""The node agent's Celery app: Celery and the broker URL, no Django, nothing central.

Built by create_app() from an AgentConfig. It shares the queue and task names and the JSON-only
message rules with the central app (fabricweb/names.py), and is tuned for a process that sits
on every compute node of a cluster doing one small thing every few seconds:
- one process (the solo pool): the task runs in the worker itself; the prefork pool's second
  process doubled the memory only to enforce a time limit, which the poll's deadline now does;
- no remote control, gossip, mingle or heartbeat: thousands of agents on one broker, and
  nothing to ask them;
- the broker connection blocks up to `broker_wait_s` in one BRPOP instead of waking every second,
  and each channel keeps one Redis client (transport.py) instead of building one per command.
"""

from __future__ import annotations

import logging

from celery import Celery
from celery.signals import after_setup_logger, worker_ready, worker_shutdown
from kombu import Exchange, Queue

from fabricweb.agent.config import AgentConfig
from fabricweb.agent.tasks import Agent
from fabricweb.brokeracl import unacked_keys
from fabricweb.brokertls import celery_ssl_options
from fabricweb.names import COLLECT, MESSAGE_SETTINGS, PLAIN_BODIES, node_queue, task_routes

log = logging.getLogger(__name__)

# Celery logs every task received and done at INFO: two lines per poll into each node's journal.
PER_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace")

# Seconds between the broker transport's sweeps for this worker's unacknowledged messages
# (kombu's default: 10 s). The agent takes its polls without acknowledgement (poll_queues),
# so it holds none; no need to scan Redis that often from every node.
UNACKED_SWEEP_S = 300


def poll_queues(nodes: list[str], queue_of=node_queue) -> list[Queue]:
    """The queues of `nodes`' polls, consumed without acknowledgement.

    A poll is worth nothing after its interval (beat sends it with `expires`, and the next one
    follows), so it is not kept in kombu's unacknowledged hash while it runs: half the Redis
    round trips of a poll (the MULTI/EXEC that stores it, the one that removes it at the ack).
    An agent killed mid-poll loses that one poll; dispatch sends the next to an empty queue.
    The same exchange and binding as Celery's own queue of that name, so central sends as before.
    """
    return [Queue(name, Exchange(name, "direct"), routing_key=name, no_ack=True) for name in map(queue_of, nodes)]


def lean_app(name: str, broker_url: str, ca_file: str | None, broker_wait_s: float, queues: list[Queue],
             unacked: dict[str, str]) -> Celery:  # fmt: skip
    """The Celery app of a process that sits on IB hosts (a node agent, a fabric collector): Celery and the
    broker URL, no Django, its own queues consumed without acknowledgement, its own unacked keys."""
    # fixups=[]: Celery would otherwise load Django whenever DJANGO_SETTINGS_MODULE is set.
    app = Celery(name, broker=broker_url, fixups=[], set_as_current=True)
    scheme = broker_url.partition("://")[0]
    app.conf.update(
        MESSAGE_SETTINGS,
        broker_transport="fabricweb.agent.transport:Transport" if scheme in ("redis", "rediss") else None,
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


def create_app(config: AgentConfig, nodes: list[str] | None = None) -> tuple[Celery, Agent]:
    app = lean_app(
        "fabricweb-agent",
        config.broker_url,
        config.ca_file,
        config.broker_wait_s,
        poll_queues(nodes) if nodes else [],
        unacked_keys(config.node_name),
    )
    agent = Agent(app, config)

    # Run directly by the worker (fabricweb/agent/strategy.py), which also says when a poll came too late. Not
    # shared: an app made later in the same process (a test's) would otherwise take this agent's task too.
    @app.task(name=COLLECT, Strategy="fabricweb.agent.strategy:direct", shared=False)
    def collect(node: str) -> dict:
        """Read `node` and send its snapshot to the snapshots queue. Beat sends it with `expires` of one interval."""
        return agent.collect(node)

    @worker_ready.connect(weak=False)
    def started(sender, **kwargs) -> None:
        agent.hello(list(sender.app.amqp.queues.consume_from))
        agent.watch_events()

    @worker_shutdown.connect(weak=False)
    def stopping(sender, **kwargs) -> None:
        agent.stop()

    return app, agent
