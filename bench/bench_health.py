"""Cost of the health engine per snapshot and per port, inside real ingest, on SQLite and PostgreSQL.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_health.py [--db sqlite|postgres|both] [--nodes 8] [--hcas 2] [--ports 2]
                                           [--warm 360] [--polls 60] [--batch 1]

A simulated fabric is ingested one snapshot per transaction (what the Celery task
does; `--batch N`: N nodes' snapshots per transaction, what the batch consumer does)
for `--warm` polls, untimed: an hour of polls fills each port's `recent` ring, which
is what judging a busy port costs most. Then `--polls` polls are timed: the engine's
own time per batch (fabricweb.health.engine.engine.Outcome.seconds) against the whole ingest
call, and the share of port judgements reused (quiet ports), and of those reused
without a view (the fast path). The PostgreSQL run uses a throwaway test database.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def run(db: str, args) -> str:
    from bench_ingest import judged
    from django.db import connections

    from collectors import read_host, to_dict
    from collectors.sim import Fabric
    from fabricweb.health.engine import engine
    from fabricweb.health.records import context
    from fabricweb.telemetry.ingest import ingest_batch

    if db == "postgres":
        connections["default"] = connections["postgres"]
    # The ports' share of the engine: their views and rules, not the batch's queries and events.
    # (main before the fast path built the views in _views and judged them in _judge.)
    for name in ("_views", "_judge"):
        if hasattr(engine, name) and not hasattr(getattr(engine, name), "timed"):
            setattr(engine, name, _timed(getattr(engine, name)))
    outcomes = judged(engine)
    context.forget()
    out = tempfile.mkdtemp(prefix="bench-health-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    try:
        fabric = Fabric.create(out, args.nodes, args.ports, seed=1, hcas=args.hcas)
        names = [n.name for n in fabric.layout.nodes]
        engine_s = ingest_s = 0.0
        judging_s = 0.0
        snapshots = ports = reused = fast = 0
        for i in range(args.warm + args.polls):
            fabric.step(10.0)
            now = T0 + timedelta(seconds=fabric.clock)
            snaps = [
                to_dict(read_host(os.path.join(out, n), host=n, use_verbs=False, now=now.timestamp())) for n in names
            ]
            for b in range(0, len(snaps), args.batch):
                judged_before = judging[0]
                outcomes.clear()
                started = time.perf_counter()
                done = ingest_batch(snaps[b : b + args.batch], now=now)
                if done.rejected:
                    raise done.rejected[0].error
                if i >= args.warm:
                    ingest_s += time.perf_counter() - started
                    engine_s += sum(o.seconds for o in outcomes)
                    judging_s += judging[0] - judged_before
                    snapshots += sum(o.snapshots for o in outcomes)
                    ports += sum(o.ports for o in outcomes)
                    reused += sum(o.reused for o in outcomes)
                    fast += sum(o.fast for o in outcomes)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return (
        f"{db:9} batch {args.batch}, {snapshots / args.polls:.0f} snapshots/poll, {ports / snapshots:.1f} ports each: "
        f"health {engine_s / snapshots * 1e3:.2f} ms/snapshot, {engine_s / ports * 1e6:.1f} us/port "
        f"(judging the ports {judging_s / ports * 1e6:.1f} us/port); "
        f"whole ingest {ingest_s / snapshots * 1e3:.2f} ms/snapshot (health {engine_s / ingest_s:.0%} of it); "
        f"judgements reused {reused / ports:.0%}, without a view {fast / ports:.0%}"
    )


judging = [0.0]  # seconds in the functions _timed wraps


def _timed(func):
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            judging[0] += time.perf_counter() - started

    timed.timed = True
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--hcas", type=int, default=2)
    parser.add_argument("--ports", type=int, default=2)
    parser.add_argument("--warm", type=int, default=360, help="untimed polls first (360: an hour of history)")
    parser.add_argument("--polls", type=int, default=60)
    parser.add_argument("--batch", type=int, default=1, help="snapshots per ingest transaction")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    import logging

    logging.getLogger("fabricweb").setLevel(logging.WARNING)
    from django.conf import settings
    from django.test.utils import get_runner

    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    if "postgres" in dbs and "postgres" not in settings.DATABASES:
        sys.exit('TEST_POSTGRES_URL is not set: run `eval "$(scripts/test-services start)"` first')
    runner = get_runner(settings)(verbosity=0)
    old = runner.setup_databases()
    try:
        for db in dbs:
            print(run(db, args), flush=True)
    finally:
        runner.teardown_databases(old)


if __name__ == "__main__":
    main()
