"""The one Celery app of the project, shared by node workers, the ingest worker and beat.

Messages are JSON only: a snapshot is a plain dict, and a broker reachable from
every compute node must never be able to make the central side unpickle anything.
The settings below are fixed here, after Django's, so no environment can loosen them.

Configuration always comes from a Django settings module: the central one
(fabricweb.settings), or on a compute node the agent's (fabricweb.agent.settings,
selected by `python -m fabricweb.agent`), which has the broker URL and no database.
The periodic schedule is fabricweb/scheduling.py.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fabricweb.settings")

INGEST_QUEUE = "ingest"
# Node snapshots: read in batches by `manage.py ingest` (fabricweb/telemetry/consumer.py),
# not by a Celery worker, so many snapshots share one database transaction.
SNAPSHOT_QUEUE = "snapshots"
ALERTS_QUEUE = "alerts"
NODE_QUEUE_PREFIX = "node."


def node_queue(node: str) -> str:
    """The queue one node's worker consumes (`celery worker -Q node.<name>`)."""
    return f"{NODE_QUEUE_PREFIX}{node}"


def route_per_node(name, args, kwargs, options, task=None, **kw):
    """Send tasks declared with `per_node=True` to the queue of the node named in kwargs['node']."""
    if task is None or not getattr(task, "per_node", False):
        return None
    node = (kwargs or {}).get("node")
    if not node:
        raise ValueError(f"{name} runs on one node: call it with node=<name>")
    return {"queue": node_queue(node)}


# Not apps of the central settings, so not autodiscovered: the node agent's task (also
# needed centrally, to route it) and the scheduling tasks.
app = Celery("fabricweb", include=["fabricweb.agent.tasks", "fabricweb.scheduling"])
# The broker URL and anything site-wide come from Django settings (CELERY_* names); the
# update below comes after, so what it fixes cannot be loosened there.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    result_accept_content=["json"],
    # Results are not read back; a task's effects are in the database.
    task_ignore_result=True,
    # A task is acknowledged only when done, and one at a time per process, so a worker that
    # dies mid-ingest has its snapshot redelivered (ingest is idempotent) and none are hoarded.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_soft_time_limit=60,
    task_time_limit=90,
    task_routes=[
        route_per_node,
        {
            # Exact names win over the wildcard below, which keeps rollups and prune on `ingest`.
            "fabricweb.telemetry.tasks.ingest_snapshot": {"queue": SNAPSHOT_QUEUE},
            "fabricweb.telemetry.tasks.ingest_snapshots": {"queue": SNAPSHOT_QUEUE},
            "fabricweb.telemetry.tasks.*": {"queue": INGEST_QUEUE},
            "fabricweb.scheduling.*": {"queue": INGEST_QUEUE},
            "fabricweb.health.tasks.*": {"queue": INGEST_QUEUE},
            "fabricweb.alerts.tasks.*": {"queue": ALERTS_QUEUE},
        },
    ],
    broker_connection_retry_on_startup=True,
    # No remote control (shutdown, pool changes, rate limits) over the broker: every compute node can
    # write to it, and none may stop the central workers or another node's agent.
    worker_enable_remote_control=False,
    enable_utc=True,
    timezone="UTC",
)
app.autodiscover_tasks()


@app.on_after_configure.connect
def _beat_schedule(sender, **kwargs):
    from django.conf import settings

    # The node agent's settings have no poll interval: a node runs no beat.
    interval = getattr(settings, "FABRIC_POLL_INTERVAL", None)
    if interval:
        from fabricweb.scheduling import beat_schedule

        sender.conf.beat_schedule = beat_schedule(interval)
