"""What central beat sends, and how often: the periodic schedule (the Celery app's beat_schedule).

Every poll interval (FABRIC_POLL_INTERVAL) the dispatch of polls (fabricweb/scheduling.py) and the
stale check; rollups every 5 minutes, prune and the retiring of vanished ports hourly, the alerts' tick
every few seconds. Each is sent with `expires` of its period (a backlog drops it rather than piling up
copies), and every job but the dispatch and the tick goes through `run_exclusive`. Names only
(fabricweb/names.py): the Celery app (fabricweb/celery.py) reads the schedule without importing the
tasks, which use the app.

Each entry is due on the clock's multiples of its period (`OnTheClock`), not a period after its last run.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from celery.schedules import schedstate, schedule

from fabricweb.names import ALERTS_TICK, CHECK_STALE, DISPATCH, EXCLUSIVE, POLL_JOBS, PRUNE, RETIRE_VANISHED, ROLLUP

# A safety net: ingest asks for a tick after each commit that changed events, and a tick asks for
# the next when its timers run out; this one covers a lost message. The tick takes its own lock.
ALERTS_TICK_S = 5.0
ROLLUP_EVERY = 300.0
PRUNE_EVERY = 3600.0

# The time limits a guarded job runs under are its own (fabricweb/telemetry/tasks.py; a
# test keeps them equal): run inline by run_exclusive, it takes on the wrapper's message's.
LIMITS = {ROLLUP: (600, 900), PRUNE: (1800, 2400), RETIRE_VANISHED: (600, 900), POLL_JOBS: (120, 180)}


class OnTheClock(schedule):
    """Due at each multiple of the period since the epoch (UTC), whenever the last run was.

    Celery's interval schedule counts the next period from the moment beat ran the last one, so beat's lateness
    adds up: woken 0.2 s late on average on a loaded machine, a 1 s poll runs every 1.2 s and a 10 s one every
    10.2 s. Here a late run leaves the next on time. A multiple less than half a period after the last run
    is passed over, so two runs are never closer than that (a run a whole period late is not made up twice).
    The polls of every node and the sweeps fall on the same instants, every period, across beat's restarts."""

    def remaining_estimate(self, last_run_at: datetime) -> timedelta:
        return timedelta(seconds=self._next_after(last_run_at) - self.now().timestamp())

    def is_due(self, last_run_at: datetime) -> schedstate:
        now = self.now().timestamp()
        due_at = self._next_after(last_run_at)
        if now < due_at:
            return schedstate(is_due=False, next=due_at - now)
        # Ran now: the next check is at the first multiple it will be due at.
        return schedstate(is_due=True, next=self._next_after_ts(now) - now)

    def _next_after(self, last_run_at: datetime) -> float:
        return self._next_after_ts(self.maybe_make_aware(last_run_at).timestamp())

    def _next_after_ts(self, last: float) -> float:
        period = self.seconds
        return (math.floor((last + period / 2) / period) + 1) * period


def _entry(task: str, every: float, args: list | None = None, **options) -> dict:
    """A beat entry for `task` every `every` seconds, on the clock, expiring after its period."""
    entry = {"task": task, "schedule": OnTheClock(timedelta(seconds=every)), "options": {"expires": every, **options}}
    if args is not None:
        entry["args"] = args
    return entry


def _exclusive(task: str, every: float) -> dict:
    soft, hard = LIMITS.get(task, (None, None))
    limits = {"soft_time_limit": soft, "time_limit": hard} if hard else {}
    return _entry(EXCLUSIVE, every, [task], **limits)


def beat_schedule(interval: float, jobs: bool = False) -> dict:
    """The whole periodic schedule (app.conf.beat_schedule) for a poll interval in seconds; with `jobs`,
    the scheduler's running jobs are read once a poll interval too (FABRIC_JOBS)."""
    entries = {
        "dispatch-collect": _entry(DISPATCH, interval),
        "check-stale": _exclusive(CHECK_STALE, interval),
        "rollup-samples": _exclusive(ROLLUP, ROLLUP_EVERY),
        "prune-old": _exclusive(PRUNE, PRUNE_EVERY),
        "retire-vanished": _exclusive(RETIRE_VANISHED, PRUNE_EVERY),
        "alerts-tick": _entry(ALERTS_TICK, ALERTS_TICK_S),
    }
    if jobs:
        entries["poll-jobs"] = _exclusive(POLL_JOBS, interval)
    return entries
