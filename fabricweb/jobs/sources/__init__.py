"""Where running jobs come from: one small base class, one module per scheduler (slurm.py).

The contract of a source (a second scheduler, slurmrestd or PBS, is one more module):

- `running()` returns every job running now, as `RunningJob` values, or raises `SchedulerError`
  with a one-line reason an operator can act on ("squeue: timed out after 10 s",
  "squeue: exit 1: slurm_load_jobs error: Unable to contact slurm controller").
- It must return within its timeout and never hang the caller; it holds no database handle.
- Node names are the scheduler's own; mapping them to fabricweb nodes is the caller's
  (fabricweb.jobs.names).
- `drain(node, reason)` takes a node out of scheduling with that reason, `resume(node)` puts it
  back, and `node_reason(node)` says whether and why it is drained now; each raises
  SchedulerError when the scheduler refuses or does not answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


class SchedulerError(RuntimeError):
    """The scheduler did not answer, or refused: the message says which, in one line."""


@dataclass(frozen=True, slots=True)
class RunningJob:
    job_id: str
    name: str
    user: str
    partition: str
    nodes: tuple[str, ...]  # the scheduler's names
    started_at: datetime | None


@dataclass(frozen=True, slots=True)
class NodeState:
    drained: bool  # DRAIN set (draining or drained)
    reason: str  # the scheduler's reason, "" when none


class JobSource:
    name = ""

    def running(self) -> list[RunningJob]:
        raise NotImplementedError

    def node_state(self, node: str) -> NodeState:
        raise NotImplementedError

    def drain(self, node: str, reason: str) -> None:
        raise NotImplementedError

    def resume(self, node: str) -> None:
        raise NotImplementedError
