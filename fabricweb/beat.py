"""What central beat sends, and how often: the periodic schedule (the Celery app's beat_schedule).

Every poll interval (FABRIC_POLL_INTERVAL) the dispatch of polls (fabricweb/scheduling.py) and the
stale check; rollups every 5 minutes, prune and the retiring of vanished ports hourly, the alerts' tick
every few seconds. Each is sent with `expires` of its period (a backlog drops it rather than piling up
copies), and every job but the dispatch and the tick goes through `run_exclusive`. Names only
(fabricweb/names.py): the Celery app (fabricweb/celery.py) reads the schedule without importing the
tasks, which use the app.
"""

from __future__ import annotations

from fabricweb.names import ALERTS_TICK, CHECK_STALE, DISPATCH, EXCLUSIVE, POLL_JOBS, PRUNE, RETIRE_VANISHED, ROLLUP

# A safety net: ingest asks for a tick after each commit that changed events, and a tick asks for
# the next when its timers run out; this one covers a lost message. The tick takes its own lock.
ALERTS_TICK_S = 5.0
ROLLUP_EVERY = 300.0
PRUNE_EVERY = 3600.0

# The time limits a guarded job runs under are its own (fabricweb/telemetry/tasks.py; a
# test keeps them equal): run inline by run_exclusive, it takes on the wrapper's message's.
LIMITS = {ROLLUP: (600, 900), PRUNE: (1800, 2400), RETIRE_VANISHED: (600, 900), POLL_JOBS: (120, 180)}


def _exclusive(task: str, every: float) -> dict:
    soft, hard = LIMITS.get(task, (None, None))
    limits = {"soft_time_limit": soft, "time_limit": hard} if hard else {}
    return {"task": EXCLUSIVE, "args": [task], "schedule": every, "options": {"expires": every, **limits}}


def beat_schedule(interval: float, jobs: bool = False) -> dict:
    """The whole periodic schedule (app.conf.beat_schedule) for a poll interval in seconds; with `jobs`,
    the scheduler's running jobs are read once a poll interval too (FABRIC_JOBS)."""
    schedule = {
        "dispatch-collect": {"task": DISPATCH, "schedule": interval, "options": {"expires": interval}},
        "check-stale": _exclusive(CHECK_STALE, interval),
        "rollup-samples": _exclusive(ROLLUP, ROLLUP_EVERY),
        "prune-old": _exclusive(PRUNE, PRUNE_EVERY),
        "retire-vanished": _exclusive(RETIRE_VANISHED, PRUNE_EVERY),
        "alerts-tick": {"task": ALERTS_TICK, "schedule": ALERTS_TICK_S, "options": {"expires": ALERTS_TICK_S}},
    }
    if jobs:
        schedule["poll-jobs"] = _exclusive(POLL_JOBS, interval)
    return schedule
