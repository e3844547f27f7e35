"""GET /api/v1/jobs and /api/v1/jobs/<id>: the scheduler's running jobs and the links their traffic crosses
(fabricweb.jobs), worst first."""

from __future__ import annotations

from fabricweb.isotime import iso
from fabricweb.jobs.report import ADAPTIVE_NOTE, LinkTrouble, find_job, freshness, job_links, job_views, running

from .. import params
from ..http import api_view, not_found


def _trouble(t: LinkTrouble) -> dict:
    return {
        "id": t.link.pk,
        "a": t.link.a_label,
        "b": t.link.b_label,
        "inter_switch": t.link.inter_switch,
        "severity": t.severity,
        "finding": t.finding,
        "event": f"/api/v1/events/{t.event_id}",
    }


def _job(view) -> dict:
    job = view.job
    return {
        "id": job.job_id,
        "url": f"/api/v1/jobs/{job.job_id}",
        "name": job.name,
        "user": job.user,
        "partition": job.partition,
        "nodes": job.nodes,
        "hosts": job.hosts,
        "node_count": job.node_count,
        "started_at": iso(job.started_at),
        "ended_at": iso(job.ended_at),
        "links_total": view.links_total,
        "links_unhealthy": [_trouble(t) for t in view.unhealthy],
        "routing_findings": job.findings,
        "unmapped_nodes": job.unmapped,
    }


def _scheduler() -> dict | None:
    fresh = freshness()
    if fresh is None:
        return None
    age = fresh.age_s
    return {
        "source": fresh.source,
        "last_ok_at": iso(fresh.last_ok_at),
        "age_s": None if age is None else round(age, 1),
        "error": fresh.error or None,
    }


@api_view
def job_list(request):
    params.read(request, {})
    return {"jobs": [_job(v) for v in running()], "scheduler": _scheduler(), "note": ADAPTIVE_NOTE}


@api_view
def job_detail(request, job_id: str):
    params.read(request, {})
    job = find_job(job_id)
    if job is None:
        raise not_found(f"job {job_id!r}")
    (view,) = job_views([job])
    listed = [
        {
            "id": link.pk,
            "a": link.a_label,
            "b": link.b_label,
            "inter_switch": link.inter_switch,
            "up": link.gone_at is None,
            "severity": trouble.severity if trouble else None,
            "finding": trouble.finding if trouble else None,
        }
        for link, trouble in job_links(job)
    ]
    return {**_job(view), "links": listed, "scheduler": _scheduler(), "note": ADAPTIVE_NOTE}
