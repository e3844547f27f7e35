"""End-to-end ingest throughput through Redis: the batch consumer against one snapshot per transaction.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_consumer.py [--db sqlite|postgres|both] [--nodes 200] [--polls 6]
                                             [--batch 100] [--max-wait 0.2] [--source sim|fixtures]
                                             [--consumers N] [--warm 360] [--default-gc] [--profile]

Snapshots are made as bench_ingest.py makes them (its functions). For each run, the first
poll of every node is stored directly (registration, not timed); the other polls are
published, as node agents send them (send_task ingest_snapshot, JSON, in their wire form), to the snapshots
queue of a private redis-server started for the benchmark; then the clock runs from
starting the consumer until every message is stored and acked.

The old path reads the same messages as the Celery ingest worker did: prefetch 1, the body of
its ingest_snapshot task (removed since) for each (one transaction), ack. It is the loop alone, without
Celery's worker (pool, tracing), so it flatters the old path a little. Every run gets node
names of its own, so each starts from registered nodes with the same history. Both paths store
each batch as if just sent (bench_ingest's `promptly`), so no node's clock looks skewed.

With --consumers N (N > 1) the comparison is one consumer against N consumer processes
sharing N snapshot queues (FABRIC_INGEST_SHARDS=N, messages routed by node as agents route
them, leases of 3 s: they share the queues out within a second), timed
from starting the consumers (forked from the measuring process) until every message is acked.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench_ingest puts the repository on sys.path: the fabricweb imports below come after it.
from bench_ingest import _drop_postgres_database, _setup_django, generate, promptly, snapshot_args, warm_up, warmed

from harness import start_redis


def publish(rounds: list[list[dict]], shards: int = 1) -> float:
    from collectors import wire
    from fabricweb.celery import app
    from fabricweb.names import INGEST_SNAPSHOT, snapshot_queue

    start = time.perf_counter()
    with app.producer_or_acquire() as producer:
        for snaps in rounds:
            for snap in snaps:
                queue = snapshot_queue(snap["host"], shards)
                app.send_task(INGEST_SNAPSHOT, args=[wire.encode(snap)], queue=queue, producer=producer)
    return time.perf_counter() - start


def consumers_run(n: int, consumers: int, batch: int, max_wait: float) -> tuple[int, int, float]:
    """`consumers` forked processes sharing `consumers` queues; (snapshots, samples, when all were acked)."""
    import multiprocessing

    from django.db import connections

    from fabricweb.telemetry.intake.consumer import BatchConsumer

    connections.close_all()  # each child opens its own
    fork = multiprocessing.get_context("fork")
    stored, samples = fork.Value("q", 0), fork.Value("q", 0)

    def child() -> None:
        consumer = BatchConsumer(batch, max_wait, shards=consumers, lease_s=3.0)
        counted = {"snapshots": 0, "samples": 0, "rejected": 0}

        def all_stored() -> bool:
            with stored.get_lock():
                for key, total in (("snapshots", stored), ("rejected", stored), ("samples", samples)):
                    total.value += consumer.totals[key] - counted[key]
                    counted[key] = consumer.totals[key]
                return stored.value >= n

        consumer.run(until=all_stored)
        connections.close_all()

    procs = [fork.Process(target=child) for _ in range(consumers)]
    for proc in procs:
        proc.start()
    while stored.value < n and any(p.is_alive() for p in procs):
        time.sleep(0.005)
    finished = time.perf_counter()
    for proc in procs:
        proc.join(30)
    return stored.value, samples.value, finished


def consumer_run(n: int, batch: int, max_wait: float) -> tuple[int, int, float]:
    """(snapshots, samples, when the last was acked): the consumer's shutdown is not timed."""
    from fabricweb.telemetry.intake.consumer import BatchConsumer

    consumer = BatchConsumer(batch, max_wait)
    finished = []

    def all_stored() -> bool:
        if consumer.totals["snapshots"] + consumer.totals["rejected"] < n:
            return False
        finished.append(time.perf_counter())
        return True

    consumer.run(until=all_stored)
    return consumer.totals["snapshots"], consumer.totals["samples"], finished[0]


def one_per_transaction(n: int) -> tuple[int, int, float]:
    """As the Celery ingest worker did: one message at a time, the task's body, then the ack."""
    from django.db import close_old_connections

    from fabricweb.celery import SNAPSHOT_QUEUE, app
    from fabricweb.telemetry import ingest
    from fabricweb.telemetry.intake.messages import Dropped, from_wire
    from fabricweb.telemetry.validation.auth import NotAuthenticated, check_unsigned

    done = {"snapshots": 0, "samples": 0}

    def task(snapshot) -> int:
        """The removed ingest_snapshot task's body for an unsigned snapshot, its wire form read back as the
        consumer reads it: the samples it stored."""
        try:
            check_unsigned()
            return ingest.ingest_snapshot(from_wire(snapshot)).samples_written
        except (NotAuthenticated, ingest.SnapshotRejected, Dropped):
            return 0

    def on_message(message) -> None:
        args, kwargs, _ = message.decode()
        close_old_connections()  # Celery's Django fixup does this around every task
        samples = task(args[0] if args else kwargs["snapshot"])
        message.ack()
        done["snapshots"] += 1
        done["samples"] += samples

    with app.connection_for_read() as conn:
        queue = app.amqp.queues[SNAPSHOT_QUEUE]
        with conn.Consumer(queue, on_message=on_message, accept=["json"], prefetch_count=1):
            while done["snapshots"] < n:
                with contextlib.suppress(TimeoutError):
                    conn.drain_events(timeout=1)
            finished = time.perf_counter()
    return done["snapshots"], done["samples"], finished


def run_child(
    db: str,
    rounds: list[list[dict]],
    batch: int,
    max_wait: float,
    consumers: int,
    profile: bool = False,
    warm: int = 0,
    default_gc: bool = False,
) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-db-") as scratch:
        label = _setup_django(db, scratch)
        try:
            from fabricweb import heap
            from fabricweb.telemetry import ingest
            from fabricweb.telemetry.intake import batchstore

            promptly(ingest)  # the registration, the warm-up, and the old path (ingest_snapshot)
            promptly(batchstore)  # the batch consumer's own name for it
            ingest_batch = ingest.ingest_batch

            if not default_gc:
                heap.settle()  # as `manage.py ingest` does (the forked consumers inherit it)

            out = []
            modes = (
                [(f"batch {batch}", 1), ("one per transaction", 1)]
                if consumers == 1
                else [(f"1 consumer, batch {batch}", 1), (f"{consumers} consumers", consumers)]
            )
            for i_mode, (mode, many) in enumerate(modes):
                tag = f"m{i_mode}-"
                renamed = [[{**s, "host": tag + s["host"]} for s in snaps] for snaps in rounds]
                for i in range(0, len(renamed[0]), 200):
                    ingest_batch(renamed[0][i : i + 200])
                extra, timed = warmed(renamed, warm)
                warm_up(ingest_batch, extra)
                published_s = publish(timed, many)
                n = sum(len(snaps) for snaps in timed)
                start = time.perf_counter()
                if many > 1:
                    snapshots, samples, finished = consumers_run(n, many, batch, max_wait)
                elif mode.startswith("one"):
                    snapshots, samples, finished = one_per_transaction(n)
                else:
                    profiler = cProfile.Profile() if profile else None
                    if profiler:
                        profiler.enable()
                    snapshots, samples, finished = consumer_run(n, batch, max_wait)
                    if profiler:
                        profiler.disable()
                elapsed = finished - start
                out.append(
                    {
                        "db": label,
                        "mode": mode,
                        "messages": n,
                        "snapshots": snapshots,
                        "samples": samples,
                        "seconds": round(elapsed, 3),
                        "snapshots_per_s": round(snapshots / elapsed),
                        "samples_per_s": round(samples / elapsed),
                        "published_per_s": round(n / published_s),
                    }
                )
                if profile and not mode.startswith("one") and many == 1:
                    text = io.StringIO()
                    sort = os.environ.get("BENCH_SORT", "tottime")
                    lines = int(os.environ.get("BENCH_LINES", "25"))
                    pstats.Stats(profiler, stream=text).sort_stats(sort).print_stats(lines)
                    out[-1]["profile"] = text.getvalue()
            return out
        finally:
            if db == "postgres":
                _drop_postgres_database()


def main() -> int:
    parser = snapshot_args(__doc__)
    parser.add_argument("--batch", type=int, default=100, help="the consumer's --batch")
    parser.add_argument("--max-wait", type=float, default=0.2, help="the consumer's --max-wait")
    parser.add_argument("--consumers", type=int, default=1, help="N > 1: one consumer against N on N shards")
    parser.add_argument("--profile", action="store_true", help="print where the batch consumer's time goes (cProfile)")
    args = parser.parse_args()

    if args.child:  # snapshots file from the parent; REDIS_URL is the parent's private redis-server
        rounds = json.loads(Path(args.child).read_text())
        print(
            json.dumps(
                run_child(
                    args.db, rounds, args.batch, args.max_wait, args.consumers, args.profile, args.warm, args.default_gc
                )
            )
        )
        return 0

    rounds, what = generate(args)
    print(f"{what}; {len(rounds[0]) * (len(rounds) - 1)} messages timed per run")
    redis_server = start_redis()
    env = {**os.environ, "REDIS_URL": redis_server.url, "LOG_LEVEL": "WARNING"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(rounds, f)
    try:
        for db in ("sqlite", "postgres") if args.db == "both" else (args.db,):
            cmd = [sys.executable, __file__, "--db", db, "--batch", str(args.batch), "--max-wait", str(args.max_wait)]
            cmd += ["--consumers", str(args.consumers), "--warm", str(args.warm)] + (
                ["--profile"] if args.profile else []
            )
            cmd += ["--default-gc"] if args.default_gc else []
            done = subprocess.run([*cmd, "--child", f.name], capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                print(done.stderr or done.stdout, file=sys.stderr)
                return done.returncode
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            for row in rows:
                print(
                    f"{row['db']:<34} {row['mode']:<20}: {row['samples_per_s']:>6} port-samples/s, "
                    f"{row['snapshots_per_s']:>5} snapshots/s ({row['snapshots']} snapshots, {row['samples']} samples "
                    f"in {row['seconds']} s; published at {row['published_per_s']}/s)"
                )
                if "profile" in row:
                    print(row["profile"])
            first, second = rows
            ratio = first["samples_per_s"] / second["samples_per_s"]
            if args.consumers == 1:
                print(f"{'':<34} the consumer is {ratio:.1f}x the old path")
            else:
                print(f"{'':<34} {args.consumers} consumers are {1 / ratio:.2f}x one")
    finally:
        redis_server.stop()
        os.unlink(f.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
