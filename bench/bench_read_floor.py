"""What only reading snapshot messages costs one ingest process: the floor under its throughput.

    .venv/bin/python bench/bench_read_floor.py [--nodes 200] [--polls 6] [--source sim|fixtures] [--runs 3]

The consumer's own steps on messages published as agents send them (send_task, plain JSON
bodies) to a private redis-server, 100 messages at a time, with nothing stored or judged:
the take (redisread.BatchReader: two round trips, the envelopes, the message objects), the
body (messages.snapshots_of: a wire snapshot the quick path takes comes out typed, validation/quickwire.py),
the validation of the others (schema.parse_snapshot, its quick path) and the ack (commit_acks). At 20,000
port-samples/s (the ingest goal, BENCHMARKS.md) one process has 50 µs per port-sample for everything; what
these steps take is not available to the deltas, the health engine or the database.

msgspec's typed decoding, a candidate measured once and not adopted, is in
docs/benchmarks-history.md ("Ingest, tenth round"); its script is gone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consumer import publish
from bench_ingest import _setup_django, from_fixtures, from_simulator

from harness import running_redis

BATCH = 100
BUDGET_US = 1e6 / 20_000  # per port-sample, at the ingest goal


def read_all(reader, queue: str, count: int, now: datetime) -> dict[str, float]:
    """Take, decode, validate and ack `count` messages with a redisread.BatchReader; seconds per step."""
    from fabricweb.telemetry.intake.messages import snapshots_of
    from fabricweb.telemetry.validation.schema import SnapshotIn, parse_snapshot

    spent = dict.fromkeys(("take", "body", "validate", "ack"), 0.0)
    done = ports = 0
    while done < count:
        t0 = time.perf_counter()
        taken = reader.take([queue], BATCH)
        t1 = time.perf_counter()
        bodies = [snapshots_of(message) for message in taken]
        t2 = time.perf_counter()
        for snaps in bodies:
            for snap in snaps:
                # As ingest_batch: a wire snapshot the quick path took was typed as it was read (in "body").
                typed = snap if type(snap) is SnapshotIn else parse_snapshot(snap, now)
                ports += sum(len(d.ports) for d in typed.devices)
        t3 = time.perf_counter()
        for message in taken:
            message.ack()
        reader.commit_acks()
        t4 = time.perf_counter()
        for step, seconds in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            spent[step] += seconds
        done += len(taken)
    spent["ports"] = ports
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--polls", type=int, default=6)
    parser.add_argument("--source", choices=("sim", "fixtures"), default="sim")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    rounds = (
        from_simulator(args.nodes, 2, 2, args.polls) if args.source == "sim" else from_fixtures(args.nodes, args.polls)
    )
    with running_redis() as server, tempfile.TemporaryDirectory(prefix="bench-floor-") as scratch:
        os.environ["REDIS_URL"] = server.url
        _setup_django("sqlite", scratch)  # parse_snapshot and the consumer import the models
        return _measure(rounds, args.runs, server.port)


def _measure(rounds: list[list[dict]], runs: int, port: int) -> int:
    import redis

    from fabricweb import heap
    from fabricweb.names import SNAPSHOT_QUEUE
    from fabricweb.telemetry.intake.readers import transport_options
    from fabricweb.telemetry.intake.redisread import BatchReader
    from fabricweb.telemetry.validation.schema import parse_snapshot

    heap.settle()  # as `manage.py ingest` does
    client = redis.Redis(port=port)
    count = sum(len(snaps) for snaps in rounds)
    publish(rounds[:1])  # to see one message's size as Redis holds it
    size = len(client.lindex(SNAPSHOT_QUEUE, 0) or b"")
    client.delete(SNAPSHOT_QUEUE)
    now = datetime.now(UTC)
    parse_snapshot(rounds[0][0], now)  # the worded checks learn the counter names once per process
    rows = []
    for run in range(runs):
        publish(rounds)
        reader = BatchReader(client, transport_options(60.0), f"floor#{run}")
        start = time.perf_counter()
        spent = read_all(reader, SNAPSHOT_QUEUE, count, now)
        spent["wall"] = time.perf_counter() - start
        reader.leave()
        rows.append(spent)
    ports = rows[0]["ports"]
    print(f"{count} messages of {ports / count:.0f} ports ({size:,} B in Redis), {runs} run(s)")
    for step in ("take", "body", "validate", "ack", "wall"):
        per_port = [r[step] / r["ports"] * 1e6 for r in rows]
        per_message = [r[step] / count * 1e6 for r in rows]
        print(
            f"  {step:<9} µs per port-sample: {' / '.join(f'{v:.1f}' for v in per_port):<20}"
            f" per message: {' / '.join(f'{v:.0f}' for v in per_message)}"
        )
    walls = [r["wall"] for r in rows]
    floor = ports / statistics.median(walls)
    median_us = statistics.median(r["wall"] / r["ports"] * 1e6 for r in rows)
    print(
        f"  reading alone: {floor:,.0f} port-samples/s (median); at 20,000/s the process has {BUDGET_US:.0f} µs "
        f"per port-sample, and reading takes {median_us:.0f} of them ({median_us / BUDGET_US:.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
