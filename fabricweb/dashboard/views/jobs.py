"""`/jobs/`: the scheduler's running jobs, the worst first (a job with an unhealthy link on its paths, which link,
its finding); `/jobs/<id>/`: one job's nodes, links and findings."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from fabricweb.fabric.models import Link
from fabricweb.inventory.models import Node
from fabricweb.jobs.models import Job
from fabricweb.jobs.report import ADAPTIVE_NOTE, freshness, job_views, link_troubles, running


@login_required
def job_list(request):
    return render(
        request,
        "dashboard/jobs.html",
        {"views": running(), "freshness": freshness(), "note": ADAPTIVE_NOTE},
    )


@login_required
def job_page(request, job_id: str):
    job = Job.objects.filter(job_id=job_id).order_by("ended_at").first()
    if job is None:
        raise Http404(f"no job {job_id}")
    (view,) = job_views([job])
    links = list(Link.objects.filter(job_links__job=job).order_by("-inter_switch", "a_label", "a_port"))
    troubles = link_troubles([link.pk for link in links])
    rank = {"critical": 0, "warning": 1}
    rows = sorted(
        ((link, troubles.get(link.pk)) for link in links),
        key=lambda row: rank.get(row[1].severity, 2) if row[1] else 2,
    )
    known = set(Node.objects.filter(name__in=job.hosts).values_list("name", flat=True))
    nodes = [(name, host, host in known) for name, host in zip(job.nodes, job.hosts, strict=False)]
    return render(
        request,
        "dashboard/job.html",
        {"view": view, "job": job, "rows": rows, "nodes": nodes, "freshness": freshness(), "note": ADAPTIVE_NOTE},
    )
