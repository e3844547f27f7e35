"""The alerts worker's one task, on queue `alerts` (fabricweb/names.py: QUEUE_OF).

`tick`: route (outbox -> threads -> deliveries), then send what is due, then ask for the
next tick when the earliest timer (a `for` wait, a group window, a retry, a repeat) runs
out. Sent by ingest after a commit that changed events, by beat every ALERTS_TICK_S as a
safety net, and by itself. Ticks never overlap: one Redis lock, which a tick waits for
briefly (unlike run_exclusive, which skips: a tick sent by ingest must not be lost) and
renews between sends, so a worker killed mid-send frees it within LOCK_S.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from celery import shared_task
from django.utils import timezone

from fabricweb.scheduling import broker_redis

from . import delivery, routing
from .outbox import TICK, kick

log = logging.getLogger(__name__)

LOCK = "fabricweb:lock:alerts-tick"
NEXT = "fabricweb:alerts:next-tick"  # when a tick is already asked for (epoch seconds)
LOCK_S = 20
WORK_S = 40.0  # then hand over to a fresh tick, inside the time limits below
SOFT_LIMIT_S, HARD_LIMIT_S = 80, 100


def schedule_tick(at: datetime | None) -> None:
    """Ask for a tick at `at`, unless one is already asked for at or before it."""
    if at is None:
        return
    client = broker_redis(_broker_url())
    wanted = at.timestamp()
    now = time.time()
    current = client.get(NEXT)
    if current is not None and now - 1 < float(current) <= wanted:
        return
    client.set(NEXT, wanted, ex=int(max(1, wanted - now)) + 60)
    kick(countdown=max(0.0, wanted - now))


def _broker_url() -> str:
    from fabricweb.celery import app

    return app.conf.broker_url


@shared_task(name=TICK, soft_time_limit=SOFT_LIMIT_S, time_limit=HARD_LIMIT_S)
def tick() -> dict:
    lock = broker_redis(_broker_url()).lock(LOCK, timeout=LOCK_S)
    if not lock.acquire(blocking=True, blocking_timeout=2):
        schedule_tick(timezone.now())  # the holder may have routed before our changes committed
        return {"skipped": "another tick is running"}
    started = time.monotonic()
    try:
        routed = routing.route()

        def keep_going() -> bool:
            lock.reacquire()  # the lock lives LOCK_S past the last send
            return time.monotonic() - started < WORK_S

        sent = delivery.deliver_all(keep_going)
    finally:
        try:
            lock.release()
        except Exception:  # expired while a receiver hung: another tick may hold it now
            log.warning("alerts: tick outlived its lock")
    more_now = time.monotonic() - started >= WORK_S
    due = [at for at in (routed.next_due, sent.next_due) if at is not None]
    schedule_tick(timezone.now() if more_now else min(due, default=None))
    return {"routed": len(routed.deliveries), "sent": sent.sent, "failed": sent.failed, "waiting": sent.waiting}
