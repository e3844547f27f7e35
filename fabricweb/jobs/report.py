"""Running jobs as the pages and the API show them: worst first, each with its unhealthy links and why.

A link is unhealthy while an open warning or critical event is on either of its ends (a port down,
trained below what both ends support, symbol errors ...): the event's message is the finding, in the
words the health rules already use. A job's worst link orders the list: critical before warning before
none, then the larger job first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from fabricweb.fabric.models import Link
from fabricweb.health.models import Event

from .models import Job, JobLink, SchedulerStatus

SEVERITY_ORDER = ("critical", "warning")
# Said wherever jobs are shown: the tables give the default route of each destination.
ADAPTIVE_NOTE = (
    "Paths are the switches' forwarding tables (the default route of each destination): where switches route "
    "adaptively, traffic may also cross other links."
)


@dataclass(slots=True)
class LinkTrouble:
    link: Link
    severity: str
    finding: str  # the open event's message
    event_id: int


@dataclass(slots=True)
class JobView:
    job: Job
    links_total: int = 0
    unhealthy: list[LinkTrouble] = field(default_factory=list)

    @property
    def worst(self) -> str | None:
        return self.unhealthy[0].severity if self.unhealthy else None


def link_troubles(link_ids=None) -> dict[int, LinkTrouble]:
    """link id -> its worst open problem, for links with one (all links, or those of `link_ids`)."""
    events = Event.objects.filter(resolved_at__isnull=True, severity__in=SEVERITY_ORDER, port__isnull=False)
    by_port: dict[int, Event] = {}
    for e in events.only("pk", "port_id", "severity", "message", "opened_at").order_by("opened_at"):
        held = by_port.get(e.port_id)
        if held is None or SEVERITY_ORDER.index(e.severity) < SEVERITY_ORDER.index(held.severity):
            by_port[e.port_id] = e
    if not by_port:
        return {}
    links = Link.objects.filter(Q(a_id__in=list(by_port)) | Q(b_id__in=list(by_port)))
    if link_ids is not None:
        links = links.filter(pk__in=list(link_ids))
    out: dict[int, LinkTrouble] = {}
    for link in links:
        ends = [by_port[p] for p in (link.a_id, link.b_id) if p in by_port]
        worst = min(ends, key=lambda e: SEVERITY_ORDER.index(e.severity))
        out[link.pk] = LinkTrouble(link, worst.severity, worst.message, worst.pk)
    return out


def _order(view: JobView) -> tuple:
    rank = SEVERITY_ORDER.index(view.worst) if view.worst else len(SEVERITY_ORDER)
    return (rank, -view.job.node_count, view.job.job_id)


def job_views(jobs: list[Job]) -> list[JobView]:
    """The jobs with their link counts and unhealthy links, worst first."""
    ids = [j.pk for j in jobs]
    counts = dict(
        JobLink.objects.filter(job_id__in=ids).values("job_id").annotate(n=Count("id")).values_list("job_id", "n")
    )
    troubles = link_troubles()
    hurt: dict[int, list[LinkTrouble]] = defaultdict(list)
    if troubles:
        for job_id, link_id in JobLink.objects.filter(job_id__in=ids, link_id__in=list(troubles)).values_list(
            "job_id", "link_id"
        ):
            hurt[job_id].append(troubles[link_id])
    views = []
    for job in jobs:
        found = sorted(hurt.get(job.pk, []), key=lambda t: (SEVERITY_ORDER.index(t.severity), t.link.a_label))
        views.append(JobView(job, counts.get(job.pk, 0), found))
    return sorted(views, key=_order)


def find_job(job_id: str) -> Job | None:
    """A job by the scheduler's id: the running one where an ended one of the same id is kept too."""
    return Job.objects.filter(job_id=job_id).order_by("ended_at").first()


def job_links(job: Job) -> list[tuple[Link, LinkTrouble | None]]:
    """Every link a job crosses with its worst open problem, worst first, then inter-switch links first."""
    links = list(Link.objects.filter(job_links__job=job).order_by("-inter_switch", "a_label", "a_port"))
    troubles = link_troubles([link.pk for link in links])
    rows = [(link, troubles.get(link.pk)) for link in links]
    return sorted(rows, key=lambda row: SEVERITY_ORDER.index(row[1].severity) if row[1] else len(SEVERITY_ORDER))


def node_jobs(host: str) -> list[Job]:
    """The running jobs on a fabricweb node, largest first."""
    jobs = [j for j in Job.objects.filter(ended_at__isnull=True) if host in j.hosts]
    return sorted(jobs, key=lambda j: (-j.node_count, j.job_id))


def running() -> list[JobView]:
    return job_views(list(Job.objects.filter(ended_at__isnull=True)))


@dataclass(frozen=True, slots=True)
class Freshness:
    """How old the jobs are: when the scheduler last answered, and why not since (None when jobs are off)."""

    source: str
    last_ok_at: datetime | None
    error: str

    @property
    def age_s(self) -> float | None:
        return None if self.last_ok_at is None else (timezone.now() - self.last_ok_at).total_seconds()


def freshness() -> Freshness | None:
    status = SchedulerStatus.objects.order_by("-last_tried_at").first()
    if status is None:
        return None
    return Freshness(status.source, status.last_ok_at, status.error)
