"""The node agent against node_exporter on a compute node: CPU, memory, start-up, wake-ups.

    .venv/bin/python bench/bench_agent.py [--runs 3] [--duration 90] [--interval 5] [--signed] [--against DIR]

Both run side by side in one run, on the same simulated node tree (1 node, 2 HCAs x 2
ports, `collectors.sim`), polled at the same rate:
- the agent: `python -m fabricweb.agent` reading the tree, with a private redis-server
  (not measured) as the broker; this script plays central beat, sending one `collect`
  to node.<name> every interval, and takes the snapshots off the `snapshots` queue;
- node_exporter: Debian's prometheus-node-exporter with only the infiniband collector
  on the same tree, scraped over loopback every interval.

Measured for each side over all its processes (the started one and its descendants):
CPU (time on a core of every thread, /proc/<pid>/task/*/schedstat) per minute of polling,
RSS and PSS at the end (/proc/<pid>/smaps_rollup), peak RSS (VmHWM), start-up (spawn to the first snapshot /
the first scrape with infiniband series), and context switches per second (every thread:
how often the process wakes up; most are wake-ups while idle). Printed with the ratios
agent / node_exporter and the agent's goals (GOALS). `--signed` gives the agent a node key
(FABRIC_NODE_KEY), as on a site with node auth: every snapshot is signed (fabricweb/nodeauth.py).
`--against DIR` runs a second agent from another tree (a worktree of another commit) in every run, beside this
tree's and node_exporter, on the same node tree at the same instants, each agent with a broker database of its own:
the machine's drift, which moves node_exporter's own CPU by half between runs a minute apart, is then the same for
all three. The machine may be shared: compare the ratios of one run. `--runs N` starts both sides afresh N times
and ends with each figure's min / median / max over the runs, the ratio's too, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors.sim import Fabric  # noqa: E402
from harness import free_port, start_redis, stop, wait_for  # noqa: E402

NODE = "cn001"
COLLECT = "fabricweb.agent.tasks.collect"
SNAPSHOTS = "snapshots"
GOALS = {"cpu": 1.0, "rss_mb": 60.0, "startup_s": 2.0}


def tree_of(pid: int) -> list[int]:
    """pid and every descendant of it alive now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def thread_files(pids: list[int], name: str):
    """The text of /proc/<pid>/task/<tid>/`name` for every thread of `pids` (gone ones skipped)."""
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                yield Path(f"/proc/{pid}/task/{tid}/{name}").read_text()
            except OSError:
                continue


def cpu_ns(pids: list[int]) -> int:
    """CPU time of every thread of `pids` (schedstat, in ns: finer than clock ticks)."""
    return sum(int(text.split()[0]) for text in thread_files(pids, "schedstat"))


def peak_rss_kb(pids: list[int]) -> int:
    """The sum of each process's peak RSS (VmHWM)."""
    peak = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        peak += sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("VmHWM:"))
    return peak


def memory_kb(pids: list[int]) -> tuple[int, int]:
    rss = pss = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key == "Rss":
                rss += int(value.split()[0])
            elif key == "Pss":
                pss += int(value.split()[0])
    return rss, pss


def context_switches(pids: list[int]) -> int:
    return sum(
        int(line.split()[1])
        for text in thread_files(pids, "status")
        for line in text.splitlines()
        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
    )


class Side:
    def __init__(self, name: str, proc: subprocess.Popen) -> None:
        self.name, self.proc, self.started = name, proc, time.monotonic()
        self.startup_s = 0.0
        self.polls = 0
        self.client = None  # an agent's broker, where its snapshots arrive

    def pids(self) -> list[int]:
        return tree_of(self.proc.pid)

    def stop(self) -> None:
        stop(self.proc)


def start_agent(
    name: str, argv: list[str], tree: Path, redis_url: str, log: Path, client, key: str = "", cwd: Path = REPO
) -> Side:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update(REDIS_URL=redis_url, FABRIC_NODE_NAME=NODE, FABRIC_SYSFS_ROOT=str(tree), LOG_LEVEL="WARNING")
    if key:
        env["FABRIC_NODE_KEY"] = key
    side = Side(name, subprocess.Popen(argv, env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT))
    # Started when its hello snapshot is on the snapshots queue: it can read and send.
    wait_for(f"the {name}'s hello snapshot", lambda: client.blpop([SNAPSHOTS], timeout=0.05), 60, 0)
    side.startup_s = time.monotonic() - side.started
    side.client = client
    return side


def start_node_exporter(tree: Path, log: Path) -> tuple[Side, str]:
    port = free_port()
    cmd = [
        shutil.which("prometheus-node-exporter") or "prometheus-node-exporter",
        "--collector.disable-defaults",
        "--collector.infiniband",
        f"--path.sysfs={tree}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    side = Side("node_exporter", subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT))
    url = f"http://127.0.0.1:{port}/metrics"
    wait_for("node_exporter's first scrape", lambda: "node_infiniband_" in scrape(url), 60, 0)
    side.startup_s = time.monotonic() - side.started
    return side, url


def scrape(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=90.0, help="seconds of polling measured (default 90)")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between polls (default 5)")
    p.add_argument("--settle", type=float, default=5.0, help="seconds after start-up before measuring (default 5)")
    p.add_argument("--signed", action="store_true", help="the agent signs its snapshots (FABRIC_NODE_KEY)")
    p.add_argument("--runs", type=int, default=3, help="runs, each starting both sides afresh (default 3)")
    p.add_argument(
        "--against",
        type=Path,
        help="a worktree of another commit: its agent runs too, beside this tree's and node_exporter, in every run",
    )
    args = p.parse_args()
    runs = []
    for number in range(1, args.runs + 1):
        load = os.getloadavg()
        print(f"run {number} of {args.runs}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
        results = one_run(args)
        if results is None:
            return 1
        runs.append(results)
    summary(runs, args)
    return 0


def one_run(args) -> dict | None:
    """Both sides started, polled for `args.duration` s, measured and stopped; their figures (None: a side died)."""
    import redis
    from celery import Celery

    tmp = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    Fabric.create(str(tmp / "sim"), 1, 2, hcas=2)
    tree = tmp / "sim" / NODE
    redis_server = start_redis(cwd=tmp)
    base = redis_server.url.rsplit("/", 1)[0]
    # `python -m` puts its working directory first on the path: each agent runs its own tree's code.
    agents = {"agent": REPO}
    if args.against:
        agents["against"] = args.against.resolve()
    sides: list[Side] = []
    beats: list[Celery] = []
    try:
        # Each agent has a Redis database of its own: its own node.<name> and snapshots queues.
        for db, (name, cwd) in enumerate(agents.items()):
            url = f"{base}/{db}"
            key = "ab" * 32 if args.signed else ""
            client = redis.Redis.from_url(url)
            argv = [sys.executable, "-m", "fabricweb.agent"]
            sides.append(start_agent(name, argv, tree, url, tmp / f"{name}.log", client, key, cwd))
            beat = Celery(f"bench-beat-{name}", broker=url, set_as_current=False)
            beat.conf.update(task_serializer="json", accept_content=["json"])
            beats.append(beat)
        exporter, metrics_url = start_node_exporter(tree, tmp / "node_exporter.log")
        sides.append(exporter)
        time.sleep(args.settle)
        before = {s.name: (cpu_ns(s.pids()), context_switches(s.pids())) for s in sides}
        t0 = time.monotonic()
        next_poll = t0
        polls = 0
        while next_poll < t0 + args.duration:
            # Two agents polled at once: the one asked second reads the files the first has just warmed (measured:
            # the same tree asked second took 0.80x the CPU), so each is asked first at every other poll.
            for beat in beats if polls % 2 == 0 else beats[::-1]:
                beat.send_task(COLLECT, kwargs={"node": NODE}, queue=f"node.{NODE}", expires=args.interval)
            polls += 1
            if "node_infiniband_" in scrape(metrics_url):
                exporter.polls += 1
            next_poll += args.interval
            # Take the snapshots off their queues until the next poll.
            while (left := next_poll - time.monotonic()) > 0:
                for side in sides[: len(beats)]:
                    if side.client.blpop([SNAPSHOTS], timeout=max(0.01, min(0.5, left / len(beats)))):
                        side.polls += 1
        minutes = (time.monotonic() - t0) / 60
        results = {}
        for s in sides:
            pids = s.pids()
            ns, switches = before[s.name]
            rss, pss = memory_kb(pids)
            results[s.name] = {
                "cpu_ms_per_min": (cpu_ns(pids) - ns) / 1e6 / minutes,
                "rss_mb": rss / 1024,
                "peak_rss_mb": peak_rss_kb(pids) / 1024,
                "pss_mb": pss / 1024,
                "processes": len(pids),
                "startup_s": s.startup_s,
                "wakeups_per_s": (context_switches(pids) - switches) / (minutes * 60),
                "polls": s.polls,
            }
        report(results, args)
        died = [s for s in sides if s.proc.poll() is not None]
        for s in died:
            log = (tmp / f"{s.name}.log").read_text()[-2000:]
            print(f"bench: {s.name} exited with {s.proc.returncode} during the run:\n{log}", file=sys.stderr)
        print(json.dumps(results))
        return None if died else results
    finally:
        for s in sides:
            s.stop()
        for beat in beats:
            beat.close()
        redis_server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(results: dict, args) -> None:
    n = results["node_exporter"]
    agents = [name for name in results if name != "node_exporter"]
    signed = ", the agent signing its snapshots" if args.signed else ""
    print(f"one node, 2 HCAs x 2 ports, a poll every {args.interval:g} s for {args.duration:g} s{signed}")
    print(f"{'':24}" + "".join(f"{name:>12}{'ratio':>8}" for name in agents) + f"{'node_exporter':>15}")
    rows = [
        ("CPU ms/min", "cpu_ms_per_min", "{:.0f}"),
        ("RSS MB (all processes)", "rss_mb", "{:.1f}"),
        ("peak RSS MB (VmHWM)", "peak_rss_mb", "{:.1f}"),
        ("PSS MB (all processes)", "pss_mb", "{:.1f}"),
        ("processes", "processes", "{:d}"),
        ("start-up s", "startup_s", "{:.2f}"),
        ("wake-ups/s", "wakeups_per_s", "{:.1f}"),
        ("polls answered", "polls", "{:d}"),
    ]
    for label, key, fmt in rows:
        line = f"{label:24}"
        for name in agents:
            a = results[name]
            ratio = a[key] / n[key] if n[key] else float("inf")
            line += f"{fmt.format(a[key]):>12}{ratio:>7.2f}x"
        print(line + f"{fmt.format(n[key]):>15}")
    if "against" in results:
        mine, theirs = results["agent"]["cpu_ms_per_min"], results["against"]["cpu_ms_per_min"]
        print(f"CPU, this tree's agent against --against's: {mine / max(theirs, 1e-9):.2f}x")
    for name in agents:
        a = results[name]
        cpu_ratio = a["cpu_ms_per_min"] / max(n["cpu_ms_per_min"], 1e-9)
        print(
            f"goals, {name}: CPU <= node_exporter's ({cpu_ratio:.2f}x, goal <= {GOALS['cpu']:.1f}x); "
            f"RSS {a['rss_mb']:.1f} MB (goal < {GOALS['rss_mb']:.0f} MB); "
            f"start-up {a['startup_s']:.2f} s (goal < {GOALS['startup_s']:.0f} s)"
        )


def summary(runs: list[dict], args) -> None:
    """Each figure's min / median / max over the runs, for each side, and the ratio's (each run's own ratio)."""
    load = os.getloadavg()
    print(f"\n{len(runs)} runs, min / median / max; load now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    agents = [name for name in runs[0] if name != "node_exporter"]
    for key, fmt in (("cpu_ms_per_min", "{:.0f}"), ("peak_rss_mb", "{:.1f}"), ("pss_mb", "{:.1f}"),
                     ("startup_s", "{:.2f}"), ("wakeups_per_s", "{:.1f}")):  # fmt: skip
        cells = []
        for name in [*agents, "node_exporter"]:
            values = sorted(run[name][key] for run in runs)
            spread = (values[0], statistics.median(values), values[-1])
            cells.append(f"{name} {' / '.join(fmt.format(v) for v in spread)}")
        for name in agents:
            ratios = sorted(run[name][key] / run["node_exporter"][key] for run in runs if run["node_exporter"][key])
            if ratios:
                spread = (ratios[0], statistics.median(ratios), ratios[-1])
                cells.append(f"ratio {' / '.join(f'{r:.2f}x' for r in spread)}")
        if "against" in agents and key == "cpu_ms_per_min":
            ratios = sorted(run["agent"][key] / run["against"][key] for run in runs if run["against"][key])
            spread = (ratios[0], statistics.median(ratios), ratios[-1])
            cells.append(f"this tree / --against {' / '.join(f'{r:.2f}x' for r in spread)}")
        print(f"  {key:16} " + "; ".join(cells))


if __name__ == "__main__":
    sys.exit(main())
