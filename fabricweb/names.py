"""Queue and task names every process agrees on, and the message rules of the broker: stated once.

Standard library only, and importing nothing of the project: the node agent (which loads
neither Django nor the central apps), the central Celery app, beat's scheduling, ingest's
consumer and the alerts all import these names instead of copying the strings. A task is
sent by name (`send_task`), so the side that sends it need not import the side that runs it.
"""

from __future__ import annotations

import zlib

# -- queues ------------------------------------------------------------------
# Central housekeeping: dispatch, stale checks, rollups, prune.
INGEST_QUEUE = "ingest"
# Node snapshots: read in batches by `manage.py ingest` (fabricweb/telemetry/intake/consumer.py),
# not by a Celery worker, so many snapshots share one database transaction. With
# FABRIC_INGEST_SHARDS = K > 1, agents send to snapshots.<k> (snapshot_queue below) and K
# consumers share those queues (fabricweb/telemetry/intake/shards.py).
SNAPSHOT_QUEUE = "snapshots"
# Snapshots `manage.py ingest` has taken but not yet stored (kombu's unacked hash, a key of its own).
SNAPSHOT_UNACKED_KEY = f"unacked.{SNAPSHOT_QUEUE}"
# Fabric collectors' sweeps: a queue of their own, read by an ingest consumer (with shards, the holder of queue 0,
# or of the sweeps' own lease where they are apart: telemetry/intake/shards.py) with a per-message cap of its own,
# so that no node may send a sweep-sized message (telemetry/intake/messages.py).
SWEEP_QUEUE = "sweeps"
ALERTS_QUEUE = "alerts"
# One queue per node, node.<name>, consumed by that node's agent only.
NODE_QUEUE_PREFIX = "node."
# One queue per fabric collector, fabric.<name>, consumed by that collector only (its sweeps).
COLLECTOR_QUEUE_PREFIX = "fabric."


def snapshot_shard(node: str, shards: int) -> int:
    """Which of `shards` snapshot queues a node's snapshots go to: CRC-32 of its name, modulo.

    Stable across processes, machines and Python versions (unlike hash()), so every agent and
    consumer agrees, and each node's polls reach the one consumer holding its rows in memory.
    """
    return zlib.crc32(node.encode()) % shards


def snapshot_queue(node: str, shards: int = 1) -> str:
    """The queue a node sends its snapshots to: `snapshots` with one shard, else snapshots.<k>."""
    if shards == 1:
        return SNAPSHOT_QUEUE
    return shard_queue(snapshot_shard(node, shards))


def shard_queue(shard: int) -> str:
    """The name of snapshot queue number `shard` (of more than one)."""
    return f"{SNAPSHOT_QUEUE}.{shard}"


def node_queue(node: str) -> str:
    """The queue one node's agent consumes (node.<name>)."""
    return f"{NODE_QUEUE_PREFIX}{node}"


def collector_queue(collector: str) -> str:
    """The queue one fabric collector consumes (fabric.<name>)."""
    return f"{COLLECTOR_QUEUE_PREFIX}{collector}"


# -- tasks -------------------------------------------------------------------
# Run by the node agent, sent by central beat's dispatch to node.<name> with kwargs {"node": name}.
COLLECT = "fabricweb.agent.tasks.collect"
# Sent by the agent to its snapshots queue with one JSON snapshot (args=[snapshot], or signed: kwargs
# snapshot, node, signature); read by `manage.py ingest` (fabricweb/telemetry/intake/consumer.py), never run
# by a Celery worker: no task of that name is registered.
INGEST_SNAPSHOT = "fabricweb.telemetry.tasks.ingest_snapshot"
# Run by a fabric collector, sent by central beat's dispatch to fabric.<name> with kwargs {"collector": name}.
SWEEP = "fabricweb.fabricagent.tasks.sweep"
# Sent by a fabric collector to its snapshots queue with one JSON fabric snapshot (signed: kwargs
# snapshot, collector, signature); read by `manage.py ingest` with the node snapshots.
INGEST_FABRIC = "fabricweb.fabric.tasks.ingest_fabric"
# Central periodic jobs (fabricweb/scheduling.py).
DISPATCH = "fabricweb.scheduling.dispatch_collect"
EXCLUSIVE = "fabricweb.scheduling.run_exclusive"
CHECK_STALE = "fabricweb.health.tasks.check_stale"
ROLLUP = "fabricweb.telemetry.tasks.rollup_samples"
PRUNE = "fabricweb.telemetry.tasks.prune_old"
RETIRE_VANISHED = "fabricweb.health.tasks.retire_vanished"
# The scheduler's running jobs and the links they cross (fabricweb/jobs/tasks.py), once a poll interval.
POLL_JOBS = "fabricweb.jobs.tasks.poll_jobs"
# The alerts worker's routing and delivery pass (fabricweb/alerts/tasks.py).
ALERTS_TICK = "fabricweb.alerts.tasks.tick"

# -- where each task runs ----------------------------------------------------
# Stated once, here, by exact name; both Celery apps route with it (task_routes()), so a task sent
# by name goes to the same queue whether or not the sending process imported it (beat, ingest's
# consumer sending the alerts' tick, the agent sending snapshots). Not declared as `queue=` on
# each task: Celery 5.7 deprecates that attribute (to be ignored from 6.0) for task_routes.
# `collect` has no entry: it goes to the queue of the node it reads (node_queue).
QUEUE_OF = {
    INGEST_SNAPSHOT: SNAPSHOT_QUEUE,
    DISPATCH: INGEST_QUEUE,
    EXCLUSIVE: INGEST_QUEUE,
    CHECK_STALE: INGEST_QUEUE,
    ROLLUP: INGEST_QUEUE,
    PRUNE: INGEST_QUEUE,
    RETIRE_VANISHED: INGEST_QUEUE,
    POLL_JOBS: INGEST_QUEUE,
    ALERTS_TICK: ALERTS_QUEUE,
}


def task_routes() -> dict[str, dict[str, str]]:
    """Celery's task_routes for QUEUE_OF: exact names, no wildcards."""
    return {name: {"queue": queue} for name, queue in QUEUE_OF.items()}


# -- messages ----------------------------------------------------------------
# JSON only, in both directions: a snapshot is a plain dict, and a broker reachable from every
# compute node must never be able to make any process unpickle anything. Applied last by every
# Celery app of the project (central and agent), so no configuration can loosen it.
MESSAGE_SETTINGS = {
    "task_serializer": "json",
    "result_serializer": "json",
    "accept_content": ["json"],
    "result_accept_content": ["json"],
    # Results are not read back; a task's effects are in the database or on a queue.
    "task_ignore_result": True,
    # A task is acknowledged only when done, one at a time per process: a worker that dies
    # mid-task has its message redelivered (ingest is idempotent), none hoarded. The agent's
    # polls and the fabric collector's sweeps are the exception: taken without acknowledgement (agent/loop.py,
    # fabricagent/app.py).
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    "broker_connection_retry_on_startup": True,
    "enable_utc": True,
    "timezone": "UTC",
    # No remote control (shutdown, pool changes, rate limits) over the broker: every compute node can
    # write to it, and none may stop the central workers or another node's agent.
    "worker_enable_remote_control": False,
}
# kombu's Redis transport options of every app that sends: message bodies as they are, not in base64.
# A body is JSON text, which kombu's JSON envelope carries as a string: a snapshot queues in 16% fewer
# bytes and the consumer decodes no base64 (BENCHMARKS.md). Read by the body_encoding each
# message names, so consumers and workers read messages sent either way (older agents: base64).
PLAIN_BODIES = {"body_encoding": None}
# Redis's refusal of a command that would grow it past its maxmemory (docker-compose.yml sets one): the
# agent waits it out a little (agent/tasks.py), the consumer takes with commands Redis still runs (redisread).
BROKER_FULL = "command not allowed when used memory"  # (redis-py drops the "OOM" prefix)
