"""Where the node agent's CPU goes: the agent under cProfile, polled back to back, then idle.

    .venv/bin/python bench/profile_agent.py [--polls 300] [--idle 30] [--top 25]

Starts a private redis-server, `python -m cProfile -m fabricweb.agent` on one simulated node
(2 HCAs x 2 ports, as bench/bench_agent.py), sends `--polls` collects one after the other (each
waits for its snapshot), leaves it idle `--idle` seconds, stops it with SIGTERM and prints the
functions that cost the most CPU (own time and cumulative). The agent's schedstat CPU
is printed for the polls and for the idle part separately.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_agent import NODE, SNAPSHOTS, cpu_ns, tree_of  # noqa: E402

from collectors.sim import Fabric  # noqa: E402
from fabricweb.names import COLLECT, node_queue  # noqa: E402
from harness import start_redis, wait_for  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--polls", type=int, default=300)
    p.add_argument("--idle", type=float, default=30.0)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--no-profile", action="store_true", help="only the schedstat figures (no cProfile overhead)")
    args = p.parse_args()

    import redis
    from celery import Celery

    tmp = Path(tempfile.mkdtemp(prefix="profile-agent-"))
    Fabric.create(str(tmp / "sim"), 1, 2, hcas=2)
    redis_server = start_redis(cwd=tmp)
    url = redis_server.url
    client = redis.Redis.from_url(url)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update(REDIS_URL=url, FABRIC_NODE_NAME=NODE, FABRIC_SYSFS_ROOT=str(tmp / "sim" / NODE), LOG_LEVEL="WARNING")
    env.update(FABRIC_NODE_KEY="ab" * 32)  # signed, as on a site with node auth
    out = tmp / "agent.prof"
    # CPU time, not cProfile's default wall clock: an agent spends nearly all its wall time waiting.
    profiled = (
        "import cProfile, runpy, sys, time\n"
        "profiler = cProfile.Profile(time.process_time)\n"
        "profiler.enable()\n"
        "try:\n"
        "    runpy.run_module('fabricweb.agent', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"profiler.disable(); profiler.dump_stats({str(out)!r})\n"
    )
    argv = ["-m", "fabricweb.agent"] if args.no_profile else ["-c", profiled]
    agent = subprocess.Popen([sys.executable, *argv], env=env, cwd=REPO)
    beat = Celery("profile-beat", broker=url, set_as_current=False)
    beat.conf.update(task_serializer="json", accept_content=["json"])
    try:
        wait_for("the hello", lambda: client.blpop([SNAPSHOTS], timeout=0.05), 60, 0)
        time.sleep(2)
        start = cpu_ns(tree_of(agent.pid))
        t0 = time.monotonic()
        for _ in range(args.polls):
            beat.send_task(COLLECT, kwargs={"node": NODE}, queue=node_queue(NODE), expires=30)
            if not client.blpop([SNAPSHOTS], timeout=30):
                raise SystemExit("no snapshot within 30 s")
        polled = cpu_ns(tree_of(agent.pid))
        wall = time.monotonic() - t0
        time.sleep(args.idle)
        idle = cpu_ns(tree_of(agent.pid))
        print(f"polls: {args.polls} in {wall:.1f} s, {(polled - start) / 1e6 / args.polls:.2f} ms CPU per poll")
        print(f"idle: {(idle - polled) / 1e6 / args.idle * 60:.1f} ms CPU per minute")
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)
        beat.close()
        redis_server.stop()
    try:
        if not args.no_profile:
            stats = pstats.Stats(str(out))
            print(f"\n--- CPU by package (whole run: start-up, {args.polls} polls, {args.idle:g} s idle, shutdown) ---")
            by_package(stats)
            for key in ("tottime", "cumulative"):
                print(f"\n--- by {key} ---")
                stats.sort_stats(key).print_stats(args.top)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


PACKAGES = ("collectors", "fabricweb", "celery", "kombu", "redis", "json", "hmac", "dataclasses", "importlib")


def by_package(stats: pstats.Stats) -> None:
    """Own CPU time summed per package (the standard library's modules by name; C functions by name)."""
    totals: dict[str, float] = {}
    for (path, _, name), (_, _, own, _, _) in stats.stats.items():
        parts = Path(path).parts
        where = next((p for p in PACKAGES if p in parts or Path(path).stem == p), None)
        where = where or (f"C: {name.split(' of ')[0]}" if path == "~" else Path(path).name)
        totals[where] = totals.get(where, 0.0) + own
    whole = sum(totals.values())
    for where, own in sorted(totals.items(), key=lambda item: -item[1])[:15]:
        print(f"{where:48s} {own:7.3f} s {own / whole:6.1%}")


if __name__ == "__main__":
    sys.exit(main())
