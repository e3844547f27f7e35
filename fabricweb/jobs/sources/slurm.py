"""Slurm through its own commands: `squeue --json` for the running jobs, `scontrol update` to drain.

Slurm 21.08 or later (`squeue --json`). The commands are the ones on PATH, or in FABRIC_SLURM_BIN;
SLURM_CONF, when set in fabricweb's environment, is passed on, as are Slurm's other variables. Each
command runs with a timeout: a controller that does not answer costs this read, never the caller.
Both the 22.05 spelling of a job (`job_state: "RUNNING"`, `start_time: 1700000000`) and the later one
(`job_state: ["RUNNING"]`, `start_time: {"set": true, "number": ...}`) are read.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

from . import JobSource, NodeState, RunningJob, SchedulerError
from .hostlist import expand

MAX_OUTPUT = 256 * 1024 * 1024  # squeue's JSON for a million jobs is far less


class SlurmSource(JobSource):
    name = "slurm"

    def __init__(self, bin_dir: str | None = None, timeout_s: float = 10.0, environ: dict | None = None) -> None:
        self.bin_dir = bin_dir
        self.timeout_s = timeout_s
        self.environ = dict(os.environ if environ is None else environ)

    def _command(self, name: str) -> str:
        return os.path.join(self.bin_dir, name) if self.bin_dir else name

    def _run(self, *args: str) -> str:
        command = [self._command(args[0]), *args[1:]]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout_s, env=self.environ, check=False
            )
        except subprocess.TimeoutExpired:
            raise SchedulerError(f"{args[0]}: no answer within {self.timeout_s:g} s") from None
        except OSError as e:
            raise SchedulerError(f"{args[0]}: cannot run {command[0]} ({e.strerror or e})") from None
        if done.returncode != 0:
            words = " ".join((done.stderr or done.stdout).split())[:300] or "no message"
            raise SchedulerError(f"{args[0]}: exit {done.returncode}: {words}")
        return done.stdout

    def running(self) -> list[RunningJob]:
        text = self._run("squeue", "--json")  # --states does not filter --json (22.05): job_state does
        if len(text) > MAX_OUTPUT:
            raise SchedulerError(f"squeue: {len(text)} bytes of JSON, more than {MAX_OUTPUT}")
        try:
            data = json.loads(text)
        except ValueError as e:
            raise SchedulerError(f"squeue: not JSON ({e})") from None
        # A controller that does not answer is an exit 0 with an error in the JSON and no jobs (22.05): read as
        # it is, that would end every job.
        errors = data.get("errors") if isinstance(data, dict) else None
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            words = " ".join(str(first.get(k) or "") for k in ("source", "description", "error")).strip()
            raise SchedulerError(f"squeue: {words or 'an error in its JSON'}"[:300])
        jobs = data.get("jobs") if isinstance(data, dict) else None
        if not isinstance(jobs, list):
            raise SchedulerError("squeue: its JSON has no list of jobs")
        out = []
        for raw in jobs:
            job = parse_job(raw)
            if job is not None:
                out.append(job)
        return out

    def node_state(self, node: str) -> NodeState:
        text = self._run("sinfo", "--noheader", "--Node", "--nodes", node, "--format", "%T|%E")
        line = text.strip().splitlines()[0] if text.strip() else ""
        if not line:
            raise SchedulerError(f"sinfo: no node {node}")
        state, _, reason = line.partition("|")
        state = state.strip().lower().rstrip("*~#!%$@^-")
        return NodeState("drain" in state, "" if reason.strip() == "none" else reason.strip())

    def drain(self, node: str, reason: str) -> None:
        self._run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")

    def resume(self, node: str) -> None:
        self._run("scontrol", "update", f"NodeName={node}", "State=RESUME")


def _value(field):
    """A number as 22.05 writes it, or as later releases do ({"set": true, "number": N})."""
    if isinstance(field, dict):
        return field.get("number") if field.get("set", True) else None
    return field


def parse_job(raw) -> RunningJob | None:
    """One job of squeue's JSON, or None when it is not a running job with nodes (or not readable)."""
    if not isinstance(raw, dict):
        return None
    state = raw.get("job_state")
    states = state if isinstance(state, list) else [state]
    if "RUNNING" not in states:
        return None
    job_id = _value(raw.get("job_id"))
    array_job, array_task = _value(raw.get("array_job_id")), _value(raw.get("array_task_id"))
    if isinstance(array_job, int) and array_job and isinstance(array_task, int):
        job_id = f"{array_job}_{array_task}"
    nodes = raw.get("nodes")
    if job_id is None or not isinstance(nodes, str) or not nodes:
        return None
    try:
        hosts = tuple(expand(nodes))
    except ValueError:
        return None
    started = _value(raw.get("start_time"))
    started_at = datetime.fromtimestamp(started, UTC) if isinstance(started, int) and started > 0 else None
    return RunningJob(
        job_id=str(job_id),
        name=str(raw.get("name") or ""),
        user=str(raw.get("user_name") or raw.get("user_id") or ""),
        partition=str(raw.get("partition") or ""),
        nodes=hosts,
        started_at=started_at,
    )
