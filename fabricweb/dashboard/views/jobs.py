"""`/jobs/`: the scheduler's running jobs, the worst first (a job with an unhealthy link on its paths, which link,
its finding); `/jobs/<id>/`: one job's nodes, links and findings."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from fabricweb.inventory.models import Node
from fabricweb.jobs.report import ADAPTIVE_NOTE, find_job, freshness, job_links, job_views, running


@login_required
def job_list(request):
    return render(
        request,
        "dashboard/jobs.html",
        {"views": running(), "freshness": freshness(), "note": ADAPTIVE_NOTE},
    )


@login_required
def job_page(request, job_id: str):
    job = find_job(job_id)
    if job is None:
        raise Http404(f"no job {job_id}")
    (view,) = job_views([job])
    rows = job_links(job)
    known = set(Node.objects.filter(name__in=job.hosts).values_list("name", flat=True))
    nodes = [(name, host, host in known) for name, host in zip(job.nodes, job.hosts, strict=False)]
    return render(
        request,
        "dashboard/job.html",
        {"view": view, "job": job, "rows": rows, "nodes": nodes, "freshness": freshness(), "note": ADAPTIVE_NOTE},
    )
