"""Read the scheduler's running jobs and bring the Job rows and their links in line, once a poll interval.

A job new to the list, or whose nodes changed, or any job after the routes or links changed, has its
links walked again (fabricweb.fabric.paths.RouteGraph, built once per refresh that needs it); every
other job keeps the links it has. A job gone from the list is ended at once: its links are dropped,
so no page or alarm names it as crossing anything. A scheduler that does not answer changes nothing
but SchedulerStatus (the pages say how old the jobs are): the jobs stay as last read.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max
from django.utils import timezone

from fabricweb.fabric.models import Link, SwitchRoutes

from .models import Job, JobLink, SchedulerStatus
from .names import host_mapper
from .sources import JobSource, RunningJob, SchedulerError
from .sources.slurm import SlurmSource

if TYPE_CHECKING:
    from fabricweb.fabric.paths import RouteGraph

log = logging.getLogger(__name__)
_BATCH = 2000


class KeptGraph:
    """The route graph of the last refresh that needed one, with the routes version it was built on: a poll that
    walks one new job pays its walks, not the reading of every table and link again. Owner: this module; made
    again on use when the routes version changed, dropped by forget() (docs/architecture.md, "What processes
    keep in memory")."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.version: str | None = None
        self.graph: RouteGraph | None = None

    def get(self, version: str) -> RouteGraph:
        if self.graph is None or self.version != version:
            # With numpy (0.15 s a process start): loaded by the worker that walks routes, not by every process
            # that imports this module (the web's drain form, beat).
            from fabricweb.fabric.paths import RouteGraph

            self.graph, self.version = RouteGraph.load(), version
        return self.graph


KEPT = KeptGraph()


def configured_source() -> JobSource | None:
    """The scheduler FABRIC_JOBS names, or None when jobs are off."""
    if settings.FABRIC_JOBS == "slurm":
        return SlurmSource(settings.FABRIC_SLURM_BIN, settings.FABRIC_JOBS_TIMEOUT)
    return None


@dataclass(slots=True)
class Refreshed:
    running: int = 0
    new: int = 0
    ended: int = 0
    walked: int = 0  # jobs whose links were computed again
    error: str = ""
    seconds: float = 0.0
    ended_ids: list[str] = field(default_factory=list)


def routes_version() -> str:
    """What every job's links depend on: the stored tables and the links, as one short key."""
    routes = SwitchRoutes.objects.aggregate(n=Count("id"), at=Max("read_at"))
    links = Link.objects.aggregate(n=Count("id"), seen=Max("first_seen_at"), gone=Max("gone_at"))
    return f"{routes['n']}:{routes['at']}:{links['n']}:{links['seen']}:{links['gone']}"


def _key(version: str, hosts: list[str]) -> str:
    return hashlib.sha256(f"{version}|{','.join(hosts)}".encode()).hexdigest()[:32]


def refresh(source: JobSource, now: datetime | None = None) -> Refreshed:
    started = time.monotonic()
    now = now or timezone.now()
    out = Refreshed()
    status, _ = SchedulerStatus.objects.get_or_create(source=source.name)
    status.last_tried_at = now
    try:
        running = source.running()
    except SchedulerError as e:
        out.error = str(e)
        status.error = out.error
        status.save(update_fields=["last_tried_at", "error"])
        log.warning("jobs: %s did not answer: %s (the jobs stay as last read)", source.name, e)
        return out
    with transaction.atomic():
        _apply(source.name, running, now, out)
    out.seconds = time.monotonic() - started
    status.last_ok_at, status.error, status.running, status.seconds = now, "", out.running, out.seconds
    status.save(update_fields=["last_tried_at", "last_ok_at", "error", "running", "seconds"])
    return out


def _apply(source: str, running: list[RunningJob], now: datetime, out: Refreshed) -> None:
    """Only what changed is written: a new job, a job whose fields or nodes changed, a job whose links are walked
    again; the others get one UPDATE of their last_seen_at together."""
    to_host = host_mapper()
    version = routes_version()
    known = {j.job_id: j for j in Job.objects.filter(source=source)}
    graph: RouteGraph | None = None
    walked: list[tuple[Job, set[int]]] = []
    seen: set[str] = set()
    for rj in running:
        if rj.job_id in seen:
            continue
        seen.add(rj.job_id)
        hosts = [to_host(n) for n in rj.nodes]
        job = known.get(rj.job_id)
        if job is None:
            job = Job(source=source, job_id=rj.job_id, first_seen_at=now)
            out.new += 1
        fields = {
            "name": rj.name[:255],
            "user": rj.user[:64],
            "partition": rj.partition[:64],
            "nodes": list(rj.nodes),
            "hosts": hosts,
            "started_at": rj.started_at,
            "ended_at": None,
        }
        changed = job.pk is None or any(getattr(job, k) != v for k, v in fields.items())
        for name, value in fields.items():
            setattr(job, name, value)
        job.last_seen_at = now
        key = _key(version, hosts)
        if job.routes_key != key:
            graph = graph or KEPT.get(version)
            paths = graph.paths(hosts)
            job.routes_key = key
            job.findings = [{"kind": f.kind, "text": f.text} for f in paths.findings]
            job.unmapped = paths.unmapped
            walked.append((job, paths.links))
        if changed or (walked and walked[-1][0] is job):
            job.save()
    out.running = len(seen)
    out.walked = len(walked)
    gone = [j for j in known.values() if j.ended_at is None and j.job_id not in seen]
    for job in gone:
        job.ended_at, job.routes_key = now, ""
        out.ended_ids.append(job.job_id)
    Job.objects.bulk_update(gone, ["ended_at", "routes_key"], batch_size=_BATCH)
    out.ended = len(gone)
    # The links of the jobs walked again, and of those ended, replaced in a few statements, not one per job.
    stale = [job.pk for job, _ in walked] + [j.pk for j in gone]
    for start in range(0, len(stale), _BATCH):
        JobLink.objects.filter(job_id__in=stale[start : start + _BATCH]).delete()
    _insert_links((job.pk, i) for job, links in walked for i in sorted(links))
    Job.objects.filter(source=source, ended_at__isnull=True).update(last_seen_at=now)
    keep = timedelta(seconds=settings.FABRIC_JOBS_KEEP_ENDED)
    Job.objects.filter(source=source, ended_at__lt=now - keep).delete()


def _insert_links(pairs) -> None:
    """(job id, link id) rows, a batch a statement, without a model object each (a 1,000-node job is ~9,000)."""
    table = connection.ops.quote_name(JobLink._meta.db_table)
    sql = f"INSERT INTO {table} (job_id, link_id) VALUES (%s, %s)"
    with connection.cursor() as cursor:
        batch = []
        for pair in pairs:
            batch.append(pair)
            if len(batch) == _BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)
