"""What an ingest consumer costs while it has nothing to take: `manage.py ingest` on empty queues.

    .venv/bin/python bench/bench_idle.py [--seconds 20] [--runs 3] [--shards 2] [--against DIR]

Each run starts the tree's own `manage.py ingest` (FABRIC_INGEST_SHARDS=--shards, so it holds the shards' leases
and the sweeps', as a lone consumer does) on a private redis-server and a scratch SQLite database migrated by
that tree, lets it settle for 5 s (until it says what it reads, then its first idle looks), then reads for
--seconds, from /proc: its CPU (user + system), its peak RSS (VmHWM), and from Redis the commands it sent
(INFO's total_commands_processed: nothing else talks to that server). `--against DIR` runs another checkout
(a git worktree of the tree before) in turn, run by run, and prints the ratio of the medians: the machine
drifts by a tenth within minutes. Each figure as min / median / max, with the load average.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_fabric import REPO, cpu_s, load, machine, proc_kb, spread

from harness import start_redis

SETTLE_S = 5.0


def migrate(tree: Path, env: dict) -> None:
    argv = [sys.executable, "manage.py", "migrate", "-v", "0"]
    subprocess.run(argv, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_run(tree: Path, env: dict, client, seconds: float, log: Path) -> dict:
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "ingest"], cwd=tree, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while "ingest: reading" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{tree}: the consumer did not start:\n{log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        time.sleep(SETTLE_S)
        cpu, commands = cpu_s(proc.pid), client.info("stats")["total_commands_processed"]
        time.sleep(seconds)
        cpu, commands = cpu_s(proc.pid) - cpu, client.info("stats")["total_commands_processed"] - commands - 1
        hwm_mb = proc_kb("VmHWM", proc.pid) / 1024
        return {"cpu_ms_s": cpu / seconds * 1000, "commands_s": commands / seconds, "hwm_mb": hwm_mb}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def report(label: str, runs: list[dict]) -> None:
    cpu, commands, hwm = ([r[key] for r in runs] for key in ("cpu_ms_s", "commands_s", "hwm_mb"))
    print(
        f"  {label}: CPU {spread(cpu, '{:.1f}')} ms a second; Redis commands {spread(commands, '{:.1f}')} a second;"
        f" peak RSS {spread(hwm, '{:.1f}')} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another checkout, run in turn")
    args = parser.parse_args()
    trees = [REPO] + ([args.against.resolve()] if args.against else [])
    print(f"machine: {machine()}; load {load()}")
    scratch = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    redis_server = start_redis()
    import redis

    client = redis.Redis.from_url(redis_server.url)
    try:
        envs = []
        for i, tree in enumerate(trees):
            env = {
                **os.environ,
                "DATABASE_URL": f"sqlite:///{scratch}/tree{i}.sqlite3",
                "REDIS_URL": redis_server.url,
                "FABRIC_INGEST_SHARDS": str(args.shards),
                "SECRET_KEY": secrets.token_urlsafe(50),
                "LOG_LEVEL": "INFO",
            }
            migrate(tree, env)
            envs.append(env)
        results: list[list[dict]] = [[] for _ in trees]
        for run in range(args.runs):
            for i, tree in enumerate(trees):
                client.flushall()
                result = one_run(tree, envs[i], client, args.seconds, scratch / f"tree{i}-run{run}.log")
                results[i].append(result)
                print(
                    f"run {run + 1}, {tree}: {result['cpu_ms_s']:.1f} ms of CPU a second, "
                    f"{result['commands_s']:.1f} Redis commands a second; load {load()}"
                )
        print(f"idle consumer, {args.shards} shard(s), {args.seconds:g} s a run, {args.runs} runs:")
        for tree, runs in zip(trees, results, strict=True):
            report(str(tree), runs)
        if args.against:
            ours, theirs = (statistics.median(r["cpu_ms_s"] for r in runs) for runs in results)
            print(f"  CPU, this tree / {args.against}: {ours / theirs:.2f}x (medians)")
        print(f"load {load()}")
    finally:
        client.close()
        redis_server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
