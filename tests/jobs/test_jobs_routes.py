"""Covers fabricweb/jobs/refresh.py, fabricweb/jobs/sources/slurm.py, fabricweb/api/views/jobs.py,
fabricweb/dashboard/views/jobs.py; through them fabricweb/jobs/names.py.

Which links a running job crosses: a real Slurm's jobs (sbatch -w) on a fabric simulated by ibsim and routed
by opensm, its sweep and forwarding tables ingested; `ibtracert` is the reference for every path."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from fabricweb.fabric.models import Link
from fabricweb.jobs.models import Job, JobLink, SchedulerStatus
from fabricweb.jobs.refresh import refresh
from fabricweb.jobs.sources.slurm import SlurmSource
from tests.ibsim_support import host_lids, needs_ibsim, switch_ends, traced
from tests.jobs.jobs_support import leaves_of
from tests.slurm_support import needs_slurm

pytestmark = [needs_ibsim, needs_slurm]


def test_jobs_cross_exactly_the_links_ibtracert_walks_and_one_inside_a_leaf_crosses_no_uplink(fabric, slurm):
    leaves = leaves_of(fabric.snap)
    single = {h: next(iter(v)) for h, v in leaves.items() if len(v) == 1}
    first_leaf = single[min(single)]
    inside = [h for h in sorted(single) if single[h] == first_leaf][:2]
    # A node runs one job at a time: the job across leaves takes other nodes, one on each other leaf.
    across = list({single[h]: h for h in sorted(single, reverse=True) if single[h] != first_leaf}.values())
    assert len(across) == 2
    inside_id = slurm.submit(inside, name="halo")
    across_id = slurm.submit(across, name="allreduce")
    done = refresh(SlurmSource(environ=slurm.env))
    assert (done.error, done.running, done.new, done.walked) == ("", 2, 2, 2)
    one_leaf = Job.objects.get(job_id=inside_id)
    assert (one_leaf.name, one_leaf.user, one_leaf.partition, one_leaf.hosts) == ("halo", "root", "all", inside)
    assert one_leaf.findings == [] and one_leaf.unmapped == []
    assert not Link.objects.filter(job_links__job=one_leaf, inter_switch=True).exists()
    lids = host_lids(fabric.snap)
    # Each port of its nodes has its own link to the leaf, and that is all it crosses.
    assert Link.objects.filter(job_links__job=one_leaf).count() == sum(len(lids[h]) for h in inside) >= 2
    wide = Job.objects.get(job_id=across_id)
    switches = {row[0] for row in fabric.snap["nodes"]["rows"] if row[1] == 2}
    assert switch_ends(Link.objects.filter(job_links__job=wide), switches) == traced(fabric, lids, across)
    assert Link.objects.filter(job_links__job=wide, inter_switch=True).count() >= 4
    # Nothing changed: the next refresh walks no path again.
    again = refresh(SlurmSource(environ=slurm.env))
    assert (again.running, again.new, again.walked) == (2, 0, 0)


def test_a_job_that_ends_leaves_at_the_next_read_and_a_silent_scheduler_changes_nothing(fabric, slurm, client):
    client.force_login(get_user_model().objects.create_user("noc", password="x"))

    def listed() -> tuple[set[str], str]:
        api = client.get("/api/v1/jobs", secure=True).json()
        return {j["id"] for j in api["jobs"]}, client.get("/jobs/", secure=True).content.decode()

    job_id = slurm.submit(["cn001", "cn009"], name="short")
    refresh(SlurmSource(environ=slurm.env))
    assert JobLink.objects.filter(job__job_id=job_id).count() > 2
    ids, page = listed()
    assert ids == {job_id} and f">{job_id}</a>" in page
    slurm.cancel(job_id)
    done = refresh(SlurmSource(environ=slurm.env))
    ids, page = listed()  # gone from the pages at the first read after it ended
    assert ids == set() and f">{job_id}</a>" not in page and "No running job." in page
    assert (done.running, done.ended, done.ended_ids) == (0, 1, [job_id])
    ended = Job.objects.get(job_id=job_id)
    assert ended.ended_at is not None and not JobLink.objects.filter(job=ended).exists()
    # The controller stops answering. squeue gives up after MessageTimeout with exit 0, no jobs and an error in
    # its JSON; or it is cut off by our timeout first. Either way the read fails and the jobs stay as they were.
    kept = slurm.submit(["cn002", "cn003"], name="kept")
    refresh(SlurmSource(environ=slurm.env))
    slurm.stop_controller()
    failed = refresh(SlurmSource(environ=slurm.env, timeout_s=15))
    assert failed.error.startswith("squeue: slurm_load_jobs") and failed.running == 0, failed.error
    cut = refresh(SlurmSource(environ=slurm.env, timeout_s=1))
    assert cut.error == "squeue: no answer within 1 s"
    status = SchedulerStatus.objects.get(source="slurm")
    assert status.error == cut.error and status.last_ok_at < status.last_tried_at
    assert Job.objects.get(job_id=kept).ended_at is None
    assert JobLink.objects.filter(job__job_id=kept).exists()
    ids, page = listed()  # the pages keep the jobs as last read, and say the scheduler did not answer
    assert ids == {kept} and "The scheduler did not answer at the last read: squeue: no answer within 1 s" in page
