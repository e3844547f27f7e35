"""Celery tasks of the jobs app, on the `ingest` queue (fabricweb/names.py: QUEUE_OF)."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from fabricweb.names import POLL_JOBS

from . import drain
from .refresh import configured_source, refresh


# Scheduled once a poll interval through run_exclusive (fabricweb/beat.py): never two at once. The scheduler's
# own commands have their timeout (FABRIC_JOBS_TIMEOUT); the time limits cover walking the paths of every job.
@shared_task(name=POLL_JOBS, soft_time_limit=120, time_limit=180, autoretry_for=(OperationalError,), max_retries=2)
def poll_jobs() -> dict:
    """Read the running jobs, end those gone, walk the links of those new or changed (fabricweb.jobs.refresh);
    then drain what the drain policy says (fabricweb.jobs.drain)."""
    source = configured_source()
    if source is None:
        return {"skipped": "FABRIC_JOBS is off"}
    done = refresh(source)
    drained = drain.run(source)
    return {
        "running": done.running,
        "new": done.new,
        "ended": done.ended,
        "walked": done.walked,
        "error": done.error,
        "drain": {"mode": drained.mode, "drained": drained.drained, "would": drained.would,
                  "failed": drained.failed, "limited": drained.limited, "resumed": drained.resumed},
    }  # fmt: skip
