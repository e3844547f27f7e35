"""Covers fabricweb/alerts/models.py.

The alerts worker as it runs: a real Celery worker on queue `alerts` and beat, on a leased Redis
database and the PostgreSQL test database (committed data: other processes read it). Events change
in the test process through EventBook, as ingest changes them; the worker is driven by beat's tick
and its own (the test process's ingest-side kicks go to the test broker, not the leased one)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections import Counter

import pytest
from django.utils import timezone

from fabricweb.alerts.models import Delivery
from harness import wait_for
from tests.alerts.alerts_support import Fabric, channel
from tests.e2e.e2e_harness import SECRET, Process, clean_env, leased_redis_db

needs_postgres = pytest.mark.skipif(
    not os.environ.get("TEST_POSTGRES_URL") and not os.environ.get("CI"), reason="TEST_POSTGRES_URL is not set"
)
pytestmark = [needs_postgres, pytest.mark.django_db(transaction=True, databases=["postgres"])]
CELERY = [sys.executable, "-m", "celery", "-A", "fabricweb"]
QUIET = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"]


class Workers:
    def __init__(self, tmp, db_url: str, redis_url: str) -> None:
        self.tmp = tmp
        self.env = clean_env(DATABASE_URL=db_url, REDIS_URL=redis_url, SECRET_KEY=SECRET, LOG_LEVEL="INFO")
        self.procs: list[Process] = []
        self.count = 0

    def worker(self) -> Process:
        self.count += 1
        argv = [*CELERY, "worker", "-Q", "alerts", "-n", f"alerts{self.count}@%h", "-c", "1", *QUIET]
        proc = Process(argv, self.env, self.tmp / f"worker{self.count}.log")
        self.procs.append(proc)
        return proc

    def beat(self) -> Process:
        argv = [*CELERY, "beat", "-s", str(self.tmp / "beat-schedule"), "--loglevel", "INFO"]
        proc = Process(argv, self.env, self.tmp / "beat.log")
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(f"--- {p.log.name} ---\n{p.tail(40)}" for p in self.procs)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.proc.poll() is None:
                with contextlib.suppress(AssertionError):
                    proc.stop()


@pytest.fixture
def workers(tmp_path, postgres):
    with leased_redis_db() as redis_url:
        w = Workers(tmp_path, postgres, redis_url)
        try:
            yield w
        finally:
            w.stop()


def sent() -> list[Delivery]:
    return list(Delivery.objects.filter(status=Delivery.Status.SENT).order_by("id"))


def test_a_receiver_down_for_15_s_gets_every_notification_once_in_order(workers, http_receiver):
    channel(url=http_receiver.url)
    fab = Fabric()
    http_receiver.stop()
    workers.worker()
    workers.beat()
    keys = ["cn001/mlx5_0/1", "cn002/mlx5_0/1", "cn003/mlx5_0/1"]
    fab.open(timezone.now(), keys[0])
    time.sleep(2)
    fab.open(timezone.now(), *keys[1:])
    wait_for("the worker to try and fail", lambda: Delivery.objects.filter(attempts__gt=0).exists(), 20)
    failed_at = time.monotonic()
    time.sleep(5)
    fab.resolve(timezone.now(), *keys[:2])  # while the receiver is still down
    time.sleep(max(0.0, 12 - (time.monotonic() - failed_at)))  # down ~15 s in all, however long the start took
    assert not sent()
    attempts = Delivery.objects.order_by("id").first().attempts
    assert 3 <= attempts <= 5, attempts  # backed off: 1, 2, 4, 8 s after the first, not once a tick
    http_receiver.start()
    try:
        wait_for("every notification delivered", lambda: Delivery.objects.count() == len(sent()) >= 2, 45, 0.5)
    except AssertionError:
        raise AssertionError(workers.logs()) from None
    uids = [r.body["id"] for r in http_receiver.requests]
    assert Counter(uids) == Counter(str(d.uid) for d in sent())  # each exactly once
    by_key: dict[str, list[str]] = {}
    for body in http_receiver.bodies():
        for item in body["events"]:
            by_key.setdefault(item["key"].split(":")[1], []).append(body["status"])
    assert by_key == {keys[0]: ["firing", "resolved"], keys[1]: ["firing", "resolved"], keys[2]: ["firing"]}


def test_a_worker_killed_mid_delivery_loses_nothing_and_resends_nothing_answered(workers, http_receiver):
    channel(url=http_receiver.url)
    fab = Fabric()
    http_receiver.hold = {1}  # the second request is not answered: the worker dies waiting for it
    first = workers.worker()
    workers.beat()
    fab.open(timezone.now(), "cn001/mlx5_0/1")
    wait_for("the firing notification answered", lambda: sent(), 30)
    fab.resolve(timezone.now(), "cn001/mlx5_0/1")
    wait_for("the resolution in flight", lambda: len(http_receiver.requests) == 2, 30)
    first.watch()
    for pid in first.seen | {first.proc.pid}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    first.proc.wait(10)
    http_receiver.release.set()
    fab.open(timezone.now(), "cn002/mlx5_0/1")
    workers.worker()
    try:
        wait_for("everything delivered by the new worker", lambda: len(sent()) == 3, 60, 0.5)
    except AssertionError:
        raise AssertionError(workers.logs()) from None
    d1, d2, d3 = sent()
    assert [r.body["id"] for r in http_receiver.requests] == [str(d1.uid), str(d2.uid), str(d2.uid), str(d3.uid)]
    assert (d1.attempts, d2.attempts, d3.attempts) == (1, 2, 1)
    assert [d.reason for d in (d1, d2, d3)] == ["firing", "resolved", "firing"]
