"""Covers fabricweb/runfabric/__main__.py, fabricweb/telemetry/history/samples.py.

Faults a monitor must survive, on a whole fabric of real processes: the broker restarted mid-run,
the database away for 30 s."""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from django.db import connections
from django.db.models import Min
from django.utils import timezone

from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.history.samples import between
from harness import free_port, start_redis
from tests.e2e.e2e_harness import INTERVAL, RunningFabric, database_alias, fresh_database, leased_redis_db

NODES = 3
OUTAGE_S = 12.0  # ends before the consumer's retry at 1 + 2 + 4 + 8 s: it catches up at that retry


LOG_TIME = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")
DISPATCHED = "fabricweb.scheduling.dispatch_collect["


def never_sent(log: list[str], node: str, since: datetime, until: datetime) -> bool:
    """Whether runfabric's log says `node` was sent no poll it could take in (since, until): its agent dropped
    one as expired, or dispatch ran less than once an interval."""
    dispatched, expired = [], False
    for line in log:
        found = LOG_TIME.search(line)
        if not found:
            continue
        at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
        if since < at < until:
            expired |= f"poll of {node} expired" in line
            if DISPATCHED in line and "succeeded" in line:
                dispatched.append(at)
    gaps = [(b - a).total_seconds() for a, b in zip([since, *dispatched], [*dispatched, until], strict=True)]
    return expired or max(gaps) > 2 * INTERVAL


def test_a_broker_restarted_mid_run_costs_at_most_the_polls_it_was_down_and_duplicates_nothing(
    tmp_path, django_db_blocker
):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    with open(tmp_path / "redis.log", "ab") as log:
        broker = start_redis(port=port, output=log)
        try:
            with (
                fresh_database("sqlite", tmp_path, migrated=True) as db_url,
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

                    # Polls still queued when the broker dies are lost with it: on a loaded machine ingest may be
                    # some seconds behind the nodes, and that lag is part of the gap, never more.
                    stalest = nodes.aggregate(m=Min("last_collected_at"))["m"]
                    steady = timezone.now()
                    behind = max(0.0, (steady - stalest).total_seconds())
                    broker.stop()  # everything queued or in flight at the broker is gone with it
                    down_at = time.monotonic()
                    time.sleep(2.0)
                    broker = start_redis(port=port, output=log)
                    restarted = timezone.now()
                    polled_again = nodes.filter(last_ingested_at__gt=restarted)
                    fabric.wait("every node polled again", lambda: polled_again.count() == NODES, 45)
                    downtime = time.monotonic() - down_at

                    assert fabric.runner.proc.poll() is None, fabric.tail()
                    samples = list(between(using=db))
                    doubled = [k for k, n in Counter((s.port_id, s.ts) for s in samples).items() if n > 1]
                    assert not doubled
                    # The widest gap in any port's polls: the broker's downtime and the polls around it, no more. Polls
                    # collected before the broker stopped are left out: on a loaded machine the gap between an agent's
                    # first poll and the first that dispatch sends it can be wider, and is no part of the restart.
                    widest = max(s.interval_s for s in samples if s.interval_s is not None and s.ts >= steady)
                    print(
                        f"broker down {downtime:.1f} s, ingest {behind:.1f} s behind before: "
                        f"widest gap in any port's polls {widest:.1f} s, none doubled"
                    )
                    assert widest <= downtime + behind + 3 * INTERVAL, (widest, downtime, behind)
                finally:
                    fabric.stop()
        finally:
            broker.stop()


def test_a_database_down_for_12_s_loses_no_poll_doubles_none_and_pages_no_node_stale(tmp_path, django_db_blocker):
    """PostgreSQL refuses every connection for 12 s (and cuts the open ones) under a running fabric."""
    import psycopg

    with (
        leased_redis_db() as redis_url,
        fresh_database("postgres", tmp_path) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_db_down", db_url) as db,
    ):
        fabric = RunningFabric(tmp_path, db, db_url, redis_url, ["--nodes", str(NODES)])
        admin = psycopg.connect(os.environ["TEST_POSTGRES_URL"], autocommit=True)
        name = db_url.rsplit("/", 1)[1]
        try:
            nodes = Node.objects.using(db)
            fabric.wait("every node polled", lambda: nodes.filter(last_ingested_at__isnull=False).count() == NODES, 60)
            time.sleep(3 * INTERVAL)
            ports = Port.objects.using(db).count()
            node_of = dict(Port.objects.using(db).values_list("pk", "device__node__name"))

            connections[db].close()
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                [name],
            )
            down_from = timezone.now()
            time.sleep(OUTAGE_S)
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            down_until = timezone.now()

            # The polls of the outage waited on the broker and are stored once the database is back.
            def during() -> Counter:  # samples per port of the outage, less a margin at both ends
                since, until = down_from + timedelta(seconds=2), down_until - timedelta(seconds=2)
                return Counter(s.port_id for s in between(since, until + timedelta(microseconds=1), using=db))

            per_port = (OUTAGE_S - 4) / INTERVAL  # the polls of during()'s window
            fabric.wait(
                "the polls of the outage stored",
                lambda: len(found := during()) == ports and min(found.values()) >= 0.7 * per_port,
                60,
            )
            caught_up_s = (timezone.now() - down_until).total_seconds()
            counts = sorted(during().values())
            print(f"database down {OUTAGE_S:g} s: {counts[0]}-{counts[-1]} polls per port stored for it, "
                  f"caught up {caught_up_s:.1f} s after it was back")  # fmt: skip
            assert fabric.runner.proc.poll() is None, fabric.tail()
            samples = list(between(using=db))
            doubled = [k for k, n in Counter((s.port_id, s.ts) for s in samples).items() if n > 1]
            assert not doubled
            # A gap is a lost poll unless the node never had it: its agent dropped the poll as expired (a loaded
            # machine starves it past the 1 s interval), or no dispatch ran to send it.
            log = fabric.runner.log.read_text(errors="replace").splitlines()
            gaps = [
                (node_of[s.port_id], round(s.interval_s, 1), round((s.ts - down_from).total_seconds(), 1))
                for s in samples
                if s.ts >= down_from
                and (s.interval_s or 0) > 3 * INTERVAL
                and not never_sent(log, node_of[s.port_id], s.ts - timedelta(seconds=s.interval_s), s.ts)
            ]
            assert not gaps, f"polls lost (node, gap in seconds, ending at seconds since the outage began): {gaps}"
            # Ingest was behind, not the nodes: nobody is paged for a stale node.
            assert not Event.objects.using(db).filter(kind="stale").exists()
        finally:
            fabric.stop()
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            admin.close()
