"""Ingest throughput in port-samples per second, on SQLite and PostgreSQL, one ingest process.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_ingest.py [--db sqlite|postgres|both] [--nodes 200] [--polls 6] [--batch 1,25,200]
                                           [--warm 360] [--default-gc] [--profile]

Snapshots come from the simulator (collectors.sim: --hcas x --ports per node) or,
with --source fixtures, from the procfs fixture tree (4 ports per node) with counters
advanced by hand. They are generated first, outside the timing, and every poll after
the first is timed: the first registers the nodes, a one-time cost reported apart.
`--batch` is how many snapshots go into one ingest_batch call (one transaction); 1 is
what the per-snapshot Celery task does. Each database runs in a child process with a
fresh database, migrated, under the project's own settings. With --warm N, N more polls
are ingested untimed first (see `warmed`): each port's ring of the last hour is full, as in
a fabric that has run for an hour, where a busy port's ring holds ~110 entries. Every batch is
stored as if just sent (`promptly`), so no node's clock looks skewed.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import os
import pstats
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
T0 = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
STEP = 10.0
PROMPT = timedelta(milliseconds=100)  # from a snapshot's date to its storing, in `promptly`


# -- snapshots --------------------------------------------------------------------------------
def from_simulator(nodes: int, hcas: int, ports: int, polls: int) -> list[list[dict]]:
    from collectors import read_host, to_dict
    from collectors.sim import Fabric

    with tempfile.TemporaryDirectory(prefix="bench-sim-") as out:
        fabric = Fabric.open(out, nodes, ports, seed=1, hcas=hcas, fresh=True)
        names = sorted(d for d in os.listdir(out) if d.startswith("cn"))
        rounds = []
        for _ in range(polls):
            fabric.step(STEP)
            now = T0 + fabric.clock
            rounds.append([to_dict(read_host(os.path.join(out, n), host=n, use_verbs=False, now=now)) for n in names])
    return rounds


def from_fixtures(nodes: int, polls: int) -> list[list[dict]]:
    from collectors import read_host, to_dict

    fixtures = REPO / "tests" / "fixtures" / "procfs" / "sys"
    base = to_dict(read_host(str(fixtures), host="x", use_verbs=False, now=T0))
    rng = random.Random(1)
    rounds = []
    state = {f"cn{i + 1:04d}": copy.deepcopy(base) for i in range(nodes)}
    for k in range(polls):
        snaps = []
        for name, snap in state.items():
            snap["host"] = name
            snap["collected_at"] = datetime.fromtimestamp(T0 + k * STEP, UTC).isoformat().replace("+00:00", "Z")
            for dev in snap["devices"]:
                for p in dev["ports"]:
                    c = p["counters"]
                    for key, step in (("port_xmit_data", 4 * 10**9), ("port_rcv_data", 4 * 10**9)):
                        c[key] += rng.randrange(step)
                    c["port_xmit_packets"] += rng.randrange(10**6)
                    c["port_rcv_packets"] += rng.randrange(10**6)
                    if rng.random() < 0.02:
                        c["symbol_error"] += rng.randrange(1, 20)
            snaps.append(copy.deepcopy(snap))
        rounds.append(snaps)
    return rounds


def warmed(rounds: list[list[dict]], polls: int) -> tuple[Iterator[list[dict]], list[list[dict]]]:
    """(`polls` more polls to put between the first round and the others, the other rounds moved after them).

    Each extra poll moves every counter as much as it moved from the first round to the
    second; the later rounds are moved on in time and counts by as much. Ingested untimed,
    they fill each port's `recent` ring and the engine's state as an hour of polls does:
    what ingest costs in steady state, not in a fabric's first minute.
    """
    if polls <= 0:
        return iter(()), rounds[1:]
    first, second = rounds[0], rounds[1]
    step_s = _when(second[0]) - _when(first[0])

    def moved(snap: dict, steps: dict, k: int, base_s: float) -> dict:
        return advanced(snap, steps, k, _iso(base_s + k * step_s))

    steps = [_steps(a, b) for a, b in zip(first, second, strict=True)]

    def extra() -> Iterator[list[dict]]:
        for k in range(1, polls + 1):
            yield [moved(snap, st, k, _when(snap)) for snap, st in zip(first, steps, strict=True)]

    later = [
        [moved(snap, st, polls, _when(snap)) for snap, st in zip(snaps, steps, strict=True)] for snaps in rounds[1:]
    ]
    return extra(), later


def advanced(snap: dict, steps: dict, k: int, collected_at: str) -> dict:
    """A copy of `snap` collected at `collected_at`, every counter moved `k` times its step (`_steps`)."""
    out = copy.deepcopy(snap)
    out["collected_at"] = collected_at
    for d, dev in enumerate(out["devices"]):
        for i, port in enumerate(dev["ports"]):
            for section in ("counters", "counters_ext", "hw_counters"):
                values = port.get(section) or {}
                for name, step in steps.get((d, i, section), {}).items():
                    if values.get(name) is not None:
                        values[name] += k * step
    return out


def _steps(a: dict, b: dict) -> dict:
    """(device index, port index, section) -> counter -> how much it moved from snapshot a to b (at least 0)."""
    out = {}
    for d, (dev_a, dev_b) in enumerate(zip(a["devices"], b["devices"], strict=True)):
        for i, (pa, pb) in enumerate(zip(dev_a["ports"], dev_b["ports"], strict=True)):
            for section in ("counters", "counters_ext", "hw_counters"):
                before, after = pa.get(section) or {}, pb.get(section) or {}
                out[d, i, section] = {
                    n: max(after[n] - v, 0) for n, v in before.items() if v is not None and after.get(n) is not None
                }
    return out


def _when(snap: dict) -> float:
    return datetime.fromisoformat(snap["collected_at"]).timestamp()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def snapshot_args(doc: str) -> argparse.ArgumentParser:
    """The options of both ingest benchmarks: databases, the snapshots (see `generate`), the child's file."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--hcas", type=int, default=2, help="HCAs per simulated node")
    parser.add_argument("--ports", type=int, default=2, help="ports per simulated HCA")
    parser.add_argument("--polls", type=int, default=6, help="polls per node (the first registers, not timed)")
    parser.add_argument("--source", choices=("sim", "fixtures"), default="sim")
    parser.add_argument(
        "--warm", type=int, default=0, help="polls ingested untimed before the timed ones (360: an hour at 10 s)"
    )
    parser.add_argument(
        "--default-gc", action="store_true", help="CPython's collector thresholds, not the ingest command's (heap.py)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser


def generate(args: argparse.Namespace) -> tuple[list[list[dict]], str]:
    """The snapshots the --source, --nodes, --polls, --hcas and --ports options ask for, and what they are."""
    start = time.perf_counter()
    if args.source == "sim":
        rounds = from_simulator(args.nodes, args.hcas, args.ports, args.polls)
    else:
        rounds = from_fixtures(args.nodes, args.polls)
    ports = sum(len(d["ports"]) for s in rounds[0] for d in s["devices"])
    what = (
        f"{len(rounds[0])} nodes, {ports} ports, {len(rounds)} polls ({args.source}; "
        f"generated in {time.perf_counter() - start:.1f} s)"
    )
    return rounds, what


# -- one database (child process) ------------------------------------------------------------
def _setup_django(db: str, scratch: str) -> str:
    from django.core.management.utils import get_random_secret_key

    os.environ["SECRET_KEY"] = get_random_secret_key()
    os.environ["DJANGO_SETTINGS_MODULE"] = "fabricweb.settings"
    if db == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{os.path.join(scratch, 'bench.sqlite3')}"
        label = "SQLite (WAL, synchronous=NORMAL)"
    else:
        import psycopg

        base = os.environ.get("TEST_POSTGRES_URL")
        if not base:
            sys.exit('TEST_POSTGRES_URL is not set: eval "$(scripts/test-services start)"')
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS fabric_bench")
            conn.execute("CREATE DATABASE fabric_bench")
            version = conn.execute("SHOW server_version").fetchone()[0]
            fsync = conn.execute("SHOW fsync").fetchone()[0]
        os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + "/fabric_bench"
        label = f"PostgreSQL {version.split()[0]} (fsync={fsync})"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return label


class PhaseClock:
    """Time spent in each step of ingest: wraps the module functions ingest calls, for this process only."""

    PHASES = (
        ("validate", "fabricweb.telemetry.ingest", "parse_snapshot"),
        ("load rows", "fabricweb.telemetry.storage.store", "load_nodes"),
        ("deltas+state", "fabricweb.telemetry.ingest", "apply_snapshot"),
        ("insert samples", "fabricweb.telemetry.storage.store", "insert_samples"),
        ("update rows", "fabricweb.telemetry.storage.store", "update_rows"),
        ("write readings", "fabricweb.telemetry.storage.store", "write_readings"),  # the ports' per-poll readings
    )

    def __init__(self) -> None:
        import importlib

        self.seconds = dict.fromkeys((p for p, _, _ in self.PHASES), 0.0)
        for phase, module, name in self.PHASES:
            mod = importlib.import_module(module)
            setattr(mod, name, self._wrap(phase, getattr(mod, name)))

    def _wrap(self, phase, func):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - start

        return timed

    def reset(self) -> None:
        self.seconds = dict.fromkeys(self.seconds, 0.0)


def run_one(
    db: str, rounds: list[list[dict]], batches: list[int], profile: bool, warm: int = 0, default_gc: bool = False
) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-db-") as scratch:
        try:
            return _run(db, scratch, rounds, batches, profile, warm, default_gc)
        finally:
            if db == "postgres":
                _drop_postgres_database()


def _drop_postgres_database() -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(os.environ["TEST_POSTGRES_URL"], autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS fabric_bench")


def _wal_lsn() -> str | None:
    """PostgreSQL: the WAL position now (the cluster's: run nothing else on it while measuring)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return cursor.fetchone()[0]


def _wal_since(lsn: str | None) -> int | None:
    from django.db import connection

    if lsn is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", [lsn])
        return int(cursor.fetchone()[0])


def judged(engine) -> list:
    """Where the Outcome of every batch the health engine judges goes from now on, in order
    (engine.judge_batch wrapped, once)."""
    judge_batch = engine.judge_batch
    seen = getattr(judge_batch, "seen", None)
    if seen is not None:
        return seen
    seen = []

    def recording(results):
        outcome = judge_batch(results)
        seen.append(outcome)
        return outcome

    recording.seen = seen
    engine.judge_batch = recording
    return seen


def promptly(module) -> None:
    """Make `module.ingest_batch` store each batch at a moment after its newest snapshot's date.

    The snapshots are dated on the bench's own timeline (T0 on, polls STEP apart), months from
    this machine's clock. Stored at the machine's time, every node's clock would look that far
    off and each would hold a clock-skew event open, updated at every poll, which a fabric whose
    clocks keep time does not: it cost the health hook 16-26 µs per sample (docs/benchmarks-history.md,
    "Ingest, seventh round"). Here each batch is stored as if it had been sent the moment it was read.
    The patch is the benchmark's, in its own process; ingest itself reads the clock.
    """
    real = module.ingest_batch

    def ingest_batch(snapshots, *, now=None):
        if now is None:
            dates = [s.get("collected_at") for s in snapshots if isinstance(s, dict)]
            dates = [datetime.fromisoformat(d) for d in dates if isinstance(d, str)]
            now = max(dates) + PROMPT if dates else None
        return real(snapshots, now=now)

    module.ingest_batch = ingest_batch


def warm_up(ingest_batch, polls: Iterator[list[dict]]) -> tuple[int, float]:
    """Ingest the warm-up polls (see `warmed`), 200 snapshots per transaction; (polls, seconds)."""
    start, count = time.perf_counter(), 0
    for snaps in polls:
        for i in range(0, len(snaps), 200):
            ingest_batch(snaps[i : i + 200])
        count += 1
    return count, time.perf_counter() - start


def _run(
    db: str,
    scratch: str,
    rounds: list[list[dict]],
    batches: list[int],
    profile: bool,
    warm: int = 0,
    default_gc: bool = False,
) -> list[dict]:
    label = _setup_django(db, scratch)
    from fabricweb import heap
    from fabricweb.health.engine import engine
    from fabricweb.telemetry import ingest
    from fabricweb.telemetry.storage import rowcache

    promptly(ingest)
    ingest_batch = ingest.ingest_batch
    outcomes = judged(engine)

    if not default_gc:
        heap.settle()  # as `manage.py ingest` does
    clock = PhaseClock()
    out = []
    for batch in batches:
        # A fresh set of nodes per batch size, so every run starts from registered, empty nodes.
        tag = f"b{batch}-"
        renamed = [[{**s, "host": tag + s["host"]} for s in snaps] for snaps in rounds]
        start = time.perf_counter()
        for i in range(0, len(renamed[0]), batch):
            ingest_batch(renamed[0][i : i + batch])
        register = time.perf_counter() - start
        extra, timed = warmed(renamed, warm)
        warm_polls, warm_s = warm_up(ingest_batch, extra)
        clock.reset()
        outcomes.clear()
        profiler = cProfile.Profile() if profile else None
        samples = 0
        wal_start = _wal_lsn()
        if profiler:
            profiler.enable()
        start = time.perf_counter()
        for snaps in timed:
            for i in range(0, len(snaps), batch):
                samples += ingest_batch(snaps[i : i + batch]).samples_written
        elapsed = time.perf_counter() - start
        hook = sum(o.seconds for o in outcomes)
        if profiler:
            profiler.disable()
        wal = _wal_since(wal_start)
        phases = {k: round(v / samples * 1e6, 1) for k, v in clock.seconds.items()}
        phases["health hook"] = round(hook / samples * 1e6, 1)
        phases["other (commit, glue)"] = round((elapsed - sum(clock.seconds.values()) - hook) / samples * 1e6, 1)
        row = {
            "db": label,
            "batch": batch,
            "samples": samples,
            "seconds": round(elapsed, 3),
            "samples_per_s": round(samples / elapsed),
            "register_s": round(register, 3),
            "warm": f"{warm_polls} polls in {warm_s:.0f} s" if warm_polls else "",
            "us_per_sample": phases,
            "quiet_reused": round(sum(o.reused for o in outcomes) / samples, 3),
            "row_cache": f"{rowcache.CACHE.hits} hits / {rowcache.CACHE.misses} misses",
            "wal_bytes_per_sample": None if wal is None else round(wal / samples),
        }
        if profiler:
            text = io.StringIO()
            sort = os.environ.get("BENCH_SORT", "tottime")
            pstats.Stats(profiler, stream=text).sort_stats(sort).print_stats(int(os.environ.get("BENCH_LINES", "18")))
            row["profile"] = text.getvalue()
        out.append(row)
    return out


# -- driver ------------------------------------------------------------------------------------
def main() -> int:
    parser = snapshot_args(__doc__)
    parser.add_argument("--batch", default="1,25,200", help="snapshots per transaction, comma-separated")
    parser.add_argument("--profile", action="store_true", help="print where the time goes (cProfile, tottime)")
    args = parser.parse_args()
    batches = [int(b) for b in args.batch.split(",")]

    if args.child:  # snapshots file from the parent
        rounds = json.loads(Path(args.child).read_text())
        print(json.dumps(run_one(args.db, rounds, batches, args.profile, args.warm, args.default_gc)))
        return 0

    rounds, what = generate(args)
    print(what)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(rounds, f)
    try:
        for db in ("sqlite", "postgres") if args.db == "both" else (args.db,):
            cmd = [sys.executable, __file__, "--db", db, "--batch", args.batch, "--warm", str(args.warm)]
            cmd += ["--child", f.name] + (["--default-gc"] if args.default_gc else [])
            if args.profile:
                cmd.append("--profile")
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr or done.stdout, file=sys.stderr)
                return done.returncode
            for row in json.loads(done.stdout.strip().splitlines()[-1]):
                print(
                    f"{row['db']:<34} batch {row['batch']:>4}: {row['samples_per_s']:>6} port-samples/s "
                    f"({row['samples']} in {row['seconds']} s; first poll {row['register_s']} s"
                    + (f"; after {row['warm']} untimed" if row["warm"] else "")
                    + ")"
                )
                print("    µs per sample: " + ", ".join(f"{k} {v}" for k, v in row["us_per_sample"].items()))
                reused = f"{row['quiet_reused']:.0%}"
                print(f"    quiet ports' judgements reused: {reused}; rows in memory: {row['row_cache']}")
                if row["wal_bytes_per_sample"] is not None:
                    print(f"    WAL written per sample: {row['wal_bytes_per_sample']} B")
                if "profile" in row:
                    print(row["profile"])
    finally:
        os.unlink(f.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
