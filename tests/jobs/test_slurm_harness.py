"""Covers tests/slurm_support.py, fabricweb/runfabric/slurm.py.

The Slurm harness against real daemons: what a job and a drained node look like to the tools we read."""

from __future__ import annotations

from tests.slurm_support import Slurm, needs_slurm

pytestmark = needs_slurm


def test_a_job_a_drain_and_a_cancel_show_as_an_operator_sees_them(tmp_path, request):
    # Names that make no one hostlist range: the harness writes a NodeName line a node.
    slurm = Slurm(tmp_path, ["cn001", "cn002", "cn003", "gpu-a"], request)

    job_id = slurm.submit(["cn001", "gpu-a"], name="allreduce")
    # Slurm 22.05 `squeue --json` (openapi v0.0.38) is {"meta", "errors", "jobs"}; a job has "job_id" (an int),
    # "name", "user_name", "user_id", "partition", "nodes" (a hostlist expression: "cn001,gpu-a", "cn[001-002]"),
    # "node_count", "job_state" ("RUNNING"), "start_time" (epoch seconds), "time_limit" (None when INFINITE).
    listing = slurm.squeue_json()
    assert listing["errors"] == []
    (job,) = [job for job in listing["jobs"] if str(job["job_id"]) == job_id]
    assert (job["name"], job["user_name"], job["partition"]) == ("allreduce", "root", "all")
    assert (job["job_state"], job["nodes"], job["node_count"]) == ("RUNNING", "cn001,gpu-a", 2)
    assert job["start_time"] > 0
    assert slurm.node_state("cn001") == ("allocated", "")

    slurm.drain("cn001", "link flaps: port 3")
    assert slurm.node_state("cn001") == ("draining", "link flaps: port 3")
    slurm.drain("cn003", "HCA replaced")
    assert slurm.node_state("cn003") == ("drained", "HCA replaced")

    slurm.cancel(job_id)
    assert job_id not in slurm.run("squeue", "-h", "-o", "%i").stdout.split()
    # The JSON keeps a finished job (MinJobAge, 300 s by default) and ignores squeue's filters (-t, -j): a reader
    # of running jobs must look at job_state.
    (job,) = [job for job in slurm.squeue_json()["jobs"] if str(job["job_id"]) == job_id]
    assert job["job_state"] == "CANCELLED"
    assert slurm.node_state("cn001") == ("drained", "link flaps: port 3")
    assert slurm.node_state("gpu-a") == ("idle", "")

    slurm.resume("cn001")
    assert slurm.node_state("cn001") == ("idle", "")
