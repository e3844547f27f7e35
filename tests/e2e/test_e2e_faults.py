"""Faults a monitor must survive, on a whole fabric of real processes: the broker restarted mid-run."""

from __future__ import annotations

import socket
import subprocess
import time

from django.db.models import Count, Max
from django.utils import timezone
from e2e_harness import INTERVAL, RunningFabric, database_alias, fresh_database

from fabricweb.inventory.models import Node
from fabricweb.telemetry.models import PortSample

NODES = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server(port: int, log) -> subprocess.Popen:
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def test_a_broker_restarted_mid_run_costs_at_most_the_polls_it_was_down_and_duplicates_nothing(
    tmp_path, django_db_blocker
):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    with open(tmp_path / "redis.log", "ab") as log:
        broker = redis_server(port, log)
        try:
            with (
                fresh_database("sqlite", tmp_path) as db_url,
                django_db_blocker.unblock(),
                database_alias("e2e_faults", db_url) as db,
            ):
                fabric = RunningFabric(tmp_path, db, db_url, url, ["--nodes", str(NODES)])
                try:
                    nodes = Node.objects.using(db)
                    fabric.wait(
                        "every node polled", lambda: nodes.filter(last_ingested_at__isnull=False).count() == NODES, 60
                    )
                    time.sleep(3 * INTERVAL)

                    broker.terminate()  # everything queued or in flight at the broker is gone with it
                    broker.wait(10)
                    down_at = time.monotonic()
                    time.sleep(2.0)
                    broker = redis_server(port, log)
                    restarted = timezone.now()
                    polled_again = nodes.filter(last_ingested_at__gt=restarted)
                    fabric.wait("every node polled again", lambda: polled_again.count() == NODES, 45)
                    downtime = time.monotonic() - down_at

                    assert fabric.runner.proc.poll() is None, fabric.tail()
                    samples = PortSample.objects.using(db)
                    doubled = samples.values("port_id", "ts").annotate(n=Count("id")).filter(n__gt=1)
                    assert not doubled.exists()
                    # The widest gap in any port's polls: the broker's downtime and the polls around it, no more.
                    widest = samples.aggregate(m=Max("interval_s"))["m"]
                    assert widest <= downtime + 3 * INTERVAL, (widest, downtime)
                finally:
                    fabric.stop()
        finally:
            broker.terminate()
            broker.wait(10)
