"""Central scheduling: the fan-out of polls, and the lock that keeps periodic jobs from overlapping.

Every poll interval (FABRIC_POLL_INTERVAL) beat sends `dispatch_collect` to the ingest queue
(what beat sends and how often: fabricweb/beat.py); it sends one `collect` per Node row to
that node's queue, node.<name>, with `expires` of one interval, so a dead node's worker that
comes back discards stale polls instead of running them. A node whose queue still holds a
message has not taken the last poll and gets no other: a dead node's queue holds one poll,
not one per interval (the agent takes polls without acknowledgement: the one it held when it
died is gone). Each dispatch tells the poll ledger (fabricweb/pollledger.py) who took their
last poll and who did not: a node is stale after missing the polls it was sent, never by the
clock alone.

Periodic jobs never overlap: each is sent with `expires` of its period (a backlog
drops it rather than piling up copies), and every job but the dispatch goes through
`run_exclusive`, which holds a Redis lock for as long as the job may run.
"""

from __future__ import annotations

import logging
import time
from functools import cache

import redis
from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from fabricweb.celery import app
from fabricweb.names import COLLECT, DISPATCH, EXCLUSIVE, SWEEP, collector_queue, node_queue
from fabricweb.pollledger import PollLedger
from fabricweb.telemetry.handed import HANDED

log = logging.getLogger(__name__)


@cache
def broker_redis(url: str) -> redis.Redis:
    """A client of the broker's Redis: the locks and the queue lengths live there."""
    return redis.Redis.from_url(url, **settings.REDIS_CLIENT_OPTIONS)


def poll_of(name: str, kind: str) -> tuple[str, str] | None:
    """(task, queue) of a node's poll: a host's collect, a fabric collector's sweep; None for a switch or an
    agentless adapter (the collectors' sweeps read them)."""
    if kind == "collector":
        return SWEEP, collector_queue(name)
    if kind in ("switch", "adapter"):
        return None
    return COLLECT, node_queue(name)


def waiting(queues: list[str], client: redis.Redis | None = None) -> set[str]:
    """The queues that still hold a message (kombu's Redis transport: one list per queue)."""
    if not queues:
        return set()
    pipe = (client or broker_redis(app.conf.broker_url)).pipeline(transaction=False)
    for queue in queues:
        pipe.llen(queue)
    return {queue for queue, length in zip(queues, pipe.execute(), strict=True) if length}


# Polls a live node may have out unanswered while ingest is less than a poll behind: the one it is
# answering, and the one whose snapshot is on its way through ingest.
ANSWER_LAG_POLLS = 2


def missed_polls(client: redis.Redis) -> dict[str, int]:
    """The polls in a row each node has missed: not taken (the ledger's count, of a node whose queue
    still holds a poll) or taken and not answered (sent after its last stored snapshot, less the
    answers still on their way: judged only while ingest is less than a poll behind)."""
    from fabricweb.inventory.models import Node
    from fabricweb.telemetry.intake import shards

    ledger = PollLedger(client)
    polled = {
        name: (poll, ingested)
        for name, kind, ingested in Node.objects.exclude(kind=Node.Kind.SWITCH).values_list(
            "name", "kind", "last_ingested_at"
        )
        if (poll := poll_of(name, kind)) is not None
    }
    untaken = ledger.missed()
    busy = waiting([polled[name][0][1] for name in untaken if name in polled], client)
    missed = {name: count for name, count in untaken.items() if name in polled and polled[name][0][1] in busy}
    if shards.backlog(client, settings.FABRIC_INGEST_SHARDS) < len(polled):
        # Only nodes quiet for longer than the lag allows can have polls unanswered beyond it: fewer lists to read.
        quiet = time.time() - (ANSWER_LAG_POLLS + 1) * settings.FABRIC_POLL_INTERVAL
        answered = {
            name: at for name, (_, ingested) in polled.items() if ingested and (at := ingested.timestamp()) < quiet
        }
        for name, sent in ledger.sent_after(answered).items():
            if sent - ANSWER_LAG_POLLS > missed.get(name, 0):
                missed[name] = sent - ANSWER_LAG_POLLS
    return missed


class KnownPolls:
    """The polls of the last dispatch that could read the nodes: polls go on while the database is away, and
    their snapshots wait on the broker until ingest can store them. Owner: this module (beat's process);
    replaced at every dispatch that read the nodes (docs/architecture.md, "What processes keep in memory")."""

    def __init__(self) -> None:
        self.polls: list[tuple[str, str, str]] = []


KNOWN = KnownPolls()


def _polls() -> list[tuple[str, str, str]]:
    """(node, task, queue) of every node to poll: hosts (collect) and fabric collectors (sweep)."""
    from fabricweb.inventory.models import Node  # central only: the node agent has no models

    try:
        nodes = list(Node.objects.exclude(kind=Node.Kind.SWITCH).values_list("name", "kind"))
    except DatabaseError as e:
        if not KNOWN.polls:
            raise
        log.warning("dispatch: database unreachable (%s); polling the %d node(s) known before", e, len(KNOWN.polls))
        return list(KNOWN.polls)
    polls = [(name, *poll) for name, kind in nodes if (poll := poll_of(name, kind)) is not None]
    KNOWN.polls = list(polls)
    return polls


@shared_task(name=DISPATCH)
def dispatch_collect() -> dict:
    """Send one `collect` to every registered node, and one `sweep` to every fabric collector, that has
    taken its last one."""
    interval = settings.FABRIC_POLL_INTERVAL
    polls = _polls()
    busy = waiting([queue for _, _, queue in polls])
    # The channel adapters whose counters the collectors read (no host agent reads them): sent only when there are
    # some, so a collector older than the `adapters` argument goes on sweeping the switches alone.
    try:
        read = HANDED.adapters() if any(task == SWEEP for _, task, _ in polls) else []
    except DatabaseError as e:
        log.warning("dispatch: database unreachable (%s); the sweeps read the switches alone", e)
        read = []
    adapters = {"adapters": read} if read else {}
    ledger = PollLedger(broker_redis(app.conf.broker_url))
    ledger.dispatched(
        time.time(),
        interval,
        taken=[name for name, _, queue in polls if queue not in busy],
        waiting=[name for name, _, queue in polls if queue in busy],
    )
    with app.producer_or_acquire() as producer:
        for name, task, queue in polls:
            if queue not in busy:
                # By name: the agents' tasks are not imported (nor registered) centrally.
                kwargs = {"collector": name, **adapters} if task == SWEEP else {"node": name}
                app.send_task(task, kwargs=kwargs, queue=queue, expires=interval, producer=producer)
    late = sorted(name for name, _, queue in polls if queue in busy)
    if late:
        log.info("dispatch: %d node(s) have not taken the last poll: %s", len(late), ", ".join(late))
    return {"sent": len(polls) - len(late), "waiting": len(late)}


_unregistered: set[str] = set()


@shared_task(bind=True, name=EXCLUSIVE)
def run_exclusive(self, task: str):
    """Run the task named `task` here, unless a run of it still holds its lock (then skip this one).

    The lock expires with this message's hard time limit: a worker killed mid-run frees it.
    """
    job = self.app.tasks.get(task)
    if job is None:
        if task not in _unregistered:  # e.g. an app not deployed yet; say so once per process
            log.warning("scheduling: %s is not a registered task; skipping it", task)
            _unregistered.add(task)
        return {"skipped": "not registered"}
    hard = (self.request.timelimit or (None, None))[0] or self.app.conf.task_time_limit
    lock = broker_redis(self.app.conf.broker_url).lock(f"fabricweb:lock:{task}", timeout=hard)
    if not lock.acquire(blocking=False):
        log.info("scheduling: %s is still running; skipping this run", task)
        return {"skipped": "running"}
    try:
        return job()
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:  # outlived its lock: another run may already hold it
            log.warning("scheduling: %s ran longer than its lock", task)
