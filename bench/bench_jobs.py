"""Routes and the links of running jobs at scale, side by side with ibroute and ibtracert.

    .venv/bin/python bench/bench_jobs.py [--runs 5] [--mix packed,oversubscribed] [--skip-ibsim]
                                         [--scheduled-runs 1] [--profile] [--keep]

Three parts; each figure is min / median / max over --runs runs, with the load average before and after
and the peak RSS (VmHWM from /proc) of the process that did the work. Everything the bench starts
(ibsim, opensm, its children) is stopped at the end, whatever happens; it writes only in a scratch
directory under /tmp. The databases are throwaway SQLite files there (fabricweb.settings with
DATABASE_URL, migrated with Django's migrate). About 5-6 minutes with the defaults on the 2-vCPU guest,
half of it the oversubscribed mix (--mix packed: about 3).

1. Reading the forwarding tables of the 256-switch x 40-port fabric of bench_fabric.py, next to ibroute.
   The fabric: `python -m collectors simulate --out DIR --nodes 471 --ports 1 --hcas 1 --fabric
   --switch-ports 40 --leaves 170 --spines 86 --once`, ibsim on its own IBSIM_SOCKNAME, `ibsim-run opensm
   -o` once (LIDs assigned, tables programmed; no subnet manager runs after it). Ours: a child process
   under ibsim-run holding Sweepers on open_port(), as bench_fabric.py runs them; each run a full sweep
   with routes=True, the Routes part timed directly (Sweeper._read_routes, wrapped: SwitchInfo and every
   LinearForwardingTable block of every switch), and the routes section's size (compact JSON, as sent).
   Theirs: what dump_lfts.sh did in infiniband-diags 1.x, a loop of `ibroute LID` over every switch, in
   sequence, timed as a whole (`ibsim-run sh -c 'for lid; do ibroute $lid; done'`): with ibsim and the
   loop pinned to one CPU every run, and as scheduled in the first --scheduled-runs runs (up to 33 s a
   loop here: see bench_fabric.py's ONE_CPU on why the synchronous tools are up to 3-5x slower unpinned on
   this guest). Also `dump_fts` (what this machine's dump_lfts runs: its own discovery, then every table),
   next to our discovery + Routes. Runs alternate ours and theirs, the order flipping every run. Once: our
   text (`python -m collectors fabric --routes --format text` under ibsim-run) against the loop's
   concatenated output ("identical", or the first differing line). Storing the tables centrally:
   ingest_fabric of that sweep's snapshot, with its routes section and without, alternated, after a first
   ingest (which creates everything) and one more of each untimed; store_routes timed inside it
   (fabricweb.fabric.ingest's name wrapped), and parse_fabric's share.
2. The links of 1,000 jobs on a synthetic 4,000-host 3-level fat tree (10 pods of 20 leaves x 20 hosts and
   20 aggregation switches, 100 cores: 500 switches of 40 ports, up/down forwarding tables), stored by
   bulk_create as ingest would leave it (inventory Node/Device/Port of every host and switch, FabricNode,
   Link with both ends' ports and labels, SwitchRoutes), in one child process per job mix:
   - packed: 1,000 jobs on disjoint nodes, a full cluster: one of 1,000 nodes, a few of 100-256, the rest
     heavy-tailed from 2 (most of 2-3 nodes), at most 4,000 nodes in all, placed at random;
   - oversubscribed: 1,000 jobs of log-uniform sizes 2..1,000 (the first 1,000), each on nodes drawn at
     random, overlapping (~160,000 job-node pairs): a stress figure.
   Jobs come from a static JobSource. After a first refresh (every job new), each run: the tables change
   (SwitchRoutes.read_at moved, as a sweep that read them again leaves it: every job walked again),
   refresh(); one new 32-node job (random nodes), refresh(); nothing changed, refresh(); the new job
   gone, refresh(). In the oversubscribed mix the table change is timed --stress-runs times (default 1:
   ~70 s each). Each refresh is split into RouteGraph.load() (reading the rows, building the graph), the walks
   (RouteGraph.paths), the SQL statements by table (connection.execute_wrapper: their execution only)
   and the rest (Python around them: model objects, saves, keys). --profile adds a cProfile of one more
   refresh after a table change. Peer: `ibtracert SRC DST`, how a job's routes are traced by hand, 50
   random host pairs on the fabric of part 1, as scheduled and pinned to one CPU, alternated; ours per
   path = the walks' time / the (source port, destination LID) pairs the job set implies (n(n-1) a job
   of n one-port hosts), and the same on the fabric of part 1 (its stored tables, every host at once).
3. What the topology check adds to a poll when nothing changed: a full sweep by a Sweeper with
   routes_interval=1e9 whose first sweep read the tables (each later sweep only computes the topology
   signature, finds it unchanged and reads no table) against one with routes_interval=None, in the same
   child process, alternated, two pairs a run; their medians' ratio, and routes_due's own time (what
   the check adds: the sweeps' own noise is larger than it). Counters-only polls never
   look at the tables. The central side: refresh() with nothing changed (part 2) against the 10 s poll.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_fabric import (  # noqa: E402 (after the path)
    PREFIX,
    Others,
    cpu_s,
    emit,
    load,
    machine,
    proc_kb,
    read_reply,
    reset_hwm,
    spread,
)

from harness import stop, wait_for  # noqa: E402

GOAL_REFRESH_CHANGED_S = 2.0  # every job's links walked and stored after a table change
GOAL_REFRESH_NEW_S = 0.1  # one new job
GOAL_POLL_ADDED = 0.05  # the topology check's cost on a full sweep, and refresh() on a 10 s poll
POLL_S = 10.0
COLLECTOR = "fabric-bench"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEP = timedelta(seconds=10)
PROMPT = timedelta(milliseconds=100)  # from a snapshot's date to its storing
INTERVAL = 1e9  # routes_interval of the Sweeper that only checks the topology
TRACE_PAIRS = 50
NEW_JOB_NODES = 32
MIXES = ("packed", "oversubscribed")
SIM_COMMAND = [
    "python", "-m", "collectors", "simulate", "--out", "DIR", "--nodes", "471", "--ports", "1", "--hcas", "1",
    "--fabric", "--switch-ports", "40", "--leaves", "170", "--spines", "86", "--once",
]  # fmt: skip

# The synthetic fat tree (part 2): 10 pods x (20 leaves + 20 aggregation switches), 20 groups of 5 cores.
PODS, LEAVES, AGGS, HOSTS_PER_LEAF, CORE_GROUPS, CORES = 10, 20, 20, 20, 20, 5
SWITCH_PORTS = 40
HOSTS = PODS * LEAVES * HOSTS_PER_LEAF


def quiet_env(env: dict) -> dict:
    return {**env, "PYTHONWARNINGS": "ignore"}


# -- part 1: the fabric under ibsim ------------------------------------------------------------------
class Simulated:
    """fabric.net written by `collectors simulate --fabric`, ibsim on it, opensm -o once; stop() ends them."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.dir = scratch / "sim"
        self.ibsim: subprocess.Popen | None = None
        self.env = {
            **os.environ,
            "IBSIM_SOCKNAME": f"bench-jobs-{uuid.uuid4().hex[:10]}",
            "OSM_CACHE_DIR": str(scratch),  # not /var/cache/opensm: LIDs of this fabric only
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }

    def start(self) -> None:
        cmd = [sys.executable, *SIM_COMMAND[1:]]
        cmd[cmd.index("DIR")] = str(self.dir)
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        logfile = self.scratch / "ibsim.log"
        with open(logfile, "wb") as log:
            self.ibsim = subprocess.Popen(
                ["ibsim", "-s", "-n", str(self.dir / "fabric.net")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.scratch,
            )  # fmt: skip
        wait_for("ibsim", lambda: "Network simulator ready" in logfile.read_text(errors="replace"), 60, 0.1)
        once = subprocess.run(
            ["ibsim-run", "opensm", "-o", "-f", str(self.scratch / "opensm.log")],
            env=self.env, capture_output=True, text=True, timeout=300, cwd=self.scratch,
        )  # fmt: skip
        if once.returncode != 0:
            raise RuntimeError(f"opensm -o failed: {once.stderr[-500:]}")

    def timed(self, cmd: list[str], out: Path | None = None, cpu: int | None = None) -> dict:
        """One run of a command under ibsim-run: wall seconds, CPU and peak RSS (wait4), ibsim's CPU.

        With `cpu`, the command and ibsim both run on that one CPU for the while (bench_fabric.py's ONE_CPU)."""
        sim_before = cpu_s(self.ibsim.pid)
        err_path = self.scratch / "tool.err"
        if cpu is not None:
            os.sched_setaffinity(self.ibsim.pid, {cpu})
        try:
            with open(err_path, "wb") as err, open(out or os.devnull, "wb") as stdout:
                start = time.perf_counter()
                proc = subprocess.Popen(
                    ["ibsim-run", *cmd], env=self.env, stdout=stdout, stderr=err, cwd=self.scratch,
                    preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
                    start_new_session=True,  # its own group: stopped whole (a loop and its ibroute) if we are
                )  # fmt: skip
                try:
                    _, status, usage = os.wait4(proc.pid, 0)
                except BaseException:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    raise
                wall = time.perf_counter() - start
        finally:
            if cpu is not None:
                os.sched_setaffinity(self.ibsim.pid, os.sched_getaffinity(0))
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        if code != 0:
            raise RuntimeError(f"{' '.join(cmd[:3])} exited {code}: {err_path.read_text(errors='replace')[-500:]}")
        return {
            "seconds": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "ibsim_cpu_s": cpu_s(self.ibsim.pid) - sim_before,
            "maxrss_kb": usage.ru_maxrss,
        }

    def stop(self) -> None:
        stop(self.ibsim)


class Collector:
    """The sweeper child under ibsim-run: three Sweepers on one port, a sweep per line on stdin."""

    def __init__(self, sim: Simulated) -> None:
        self.sim = sim
        self.proc = subprocess.Popen(
            ["ibsim-run", sys.executable, __file__, "--sweeper", str(sim.scratch)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(sim.scratch / "collector.err", "wb"),  # noqa: SIM115
            env=sim.env, text=True, cwd=sim.scratch,  # umad2sim writes its sys-<pid> tree in the cwd
        )  # fmt: skip
        try:
            ready = read_reply(self.proc)
            if "error" in ready:
                raise RuntimeError(f"the collector could not open its port: {ready['error']}")
        except BaseException:
            stop(self.proc)
            raise

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return read_reply(self.proc)

    def close(self) -> dict:
        try:
            return self.ask("quit")
        finally:
            stop(self.proc)


def sweeper_child(scratch: str) -> int:
    """Under ibsim-run. `routes`: a full sweep with routes=True, its Routes part timed; `interval`: a full
    sweep by a Sweeper with routes_interval=INTERVAL (routes_due timed); `none`: one with routes_interval=None."""
    from collectors.mads.snapshot import to_dict
    from collectors.mads.sweep import Sweeper, open_port
    from fabricweb import heap

    try:
        port = open_port()
    except OSError as e:
        emit({"error": str(e)})
        return 1
    sweepers = {
        "routes": Sweeper(port, COLLECTOR),
        "interval": Sweeper(port, COLLECTOR, routes_interval=INTERVAL),
        "none": Sweeper(port, COLLECTOR, routes_interval=None),
    }
    clock: dict[str, float] = {}

    def timed(name: str, method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            clock[name + "_start"] = start
            try:
                result = method(*args, **kwargs)
                clock[name + "_result"] = result
                return result
            finally:
                clock[name] = clock.get(name, 0.0) + time.perf_counter() - start

        return wrapper

    for sweeper in sweepers.values():
        sweeper._read_routes = timed("routes", sweeper._read_routes)
        sweeper.routes_due = timed("due", sweeper.routes_due)
    heap.settle()  # as the fabric agent runs
    emit({"ready": True})
    for line in sys.stdin:
        command = line.split()
        if command[0] == "quit":
            emit({"hwm_kb": proc_kb("VmHWM"), "rss_kb": proc_kb("VmRSS")})
            return 0
        which, save = command[0], command[1:] == ["save"]
        clock.clear()
        start = time.perf_counter()
        sweep = sweepers[which].sweep("full", routes=True if which == "routes" else None)
        seconds = time.perf_counter() - start
        reply = {
            "seconds": seconds,
            "routes_read": sweep.routes,
            "routes_s": clock.get("routes"),
            "routes_mads": clock.get("routes_result") if which == "routes" else None,
            "due_s": clock.get("due"),
            "queries": sweep.queries,
            "errors": len(sweep.errors),
            "first_error": f"{sweep.errors[0].path}: {sweep.errors[0].reason}" if sweep.errors else None,
        }
        if which == "routes":
            snap = to_dict(sweep)
            reply["discovery_s"] = clock["routes_start"] - start
            reply["routes_bytes"] = len(json.dumps(snap["routes"], separators=(",", ":")).encode())
            reply["snapshot_bytes"] = len(json.dumps(snap, separators=(",", ":")).encode())
            reply["tables"] = len(snap["routes"]["rows"])
            reply["table_lids"] = statistics.median(len(r[2]) // 2 for r in snap["routes"]["rows"])
            if save:
                Path(scratch, "full-routes.json").write_text(json.dumps(snap, separators=(",", ":")))
        emit(reply)
    return 0


def ibroute_loop(lids: list[int]) -> list[str]:
    """dump_lfts.sh's loop: `ibroute LID` for each switch, in sequence (LD_PRELOAD holds for each)."""
    return ["sh", "-c", 'for lid; do ibroute "$lid" || exit 1; done', "sh", *map(str, lids)]


def measure_ibsim(sim: Simulated, runs: int, scheduled_runs: int) -> dict:
    out: dict = {"load_before": load()}
    series = defaultdict(list)
    one_cpu = min(os.sched_getaffinity(0))
    collector = Collector(sim)
    try:
        out["first"] = collector.ask("routes save")  # discovery from nothing, the tables read: untimed
        collector.ask("interval")  # its first sweep reads the tables (never read yet)
        collector.ask("none")
        snap = json.loads((sim.scratch / "full-routes.json").read_text())
        lids = sorted(r[1] for r in snap["routes"]["rows"])
        out["switches"] = len(lids)
        loop = ibroute_loop(lids)
        sim.timed(["ibroute", str(lids[0])])  # the tools' first run, untimed
        pids = lambda: [p.pid for p in (sim.ibsim, collector.proc)]  # noqa: E731
        theirs_text = sim.scratch / "ibroute.txt"

        def timed(key: str, step) -> None:
            with Others(pids) as others:
                result = step()
            series[key].append(result | {"others": others.cpus})

        def ours() -> None:
            timed("ours", lambda: collector.ask("routes"))

        def loop_one_cpu() -> None:
            first = not series["ibroute@1"]
            timed("ibroute@1", lambda: sim.timed(loop, out=theirs_text if first else None, cpu=one_cpu))

        def loop_scheduled() -> None:
            timed("ibroute", lambda: sim.timed(loop))

        def fts() -> None:
            timed("dump_fts", lambda: sim.timed(["dump_fts"]))
            timed("dump_fts@1", lambda: sim.timed(["dump_fts"], cpu=one_cpu))

        def check() -> None:  # part 3: the topology signature only, against no routes at all; two pairs a run
            for _ in range(2):
                pair = ["interval", "none"]
                for key in pair if len(series["interval"]) % 2 == 0 else pair[::-1]:
                    timed(key, lambda key=key: collector.ask(key))

        for run in range(runs):
            steps = [ours, loop_one_cpu, fts, check] + ([loop_scheduled] if run < scheduled_runs else [])
            for step in steps if run % 2 == 0 else steps[::-1]:
                step()
        out["compare"] = compare_text(sim, theirs_text)
        out["trace"] = measure_ibtracert(sim, snap, one_cpu)
    finally:
        out["collector"] = collector.close()
    out.update(series)
    out["load_after"] = load()
    return out


def compare_text(sim: Simulated, theirs_text: Path) -> dict:
    """Our `fabric --routes --format text` against the ibroute loop's output, once."""
    ours_text = sim.scratch / "ours.txt"
    result = sim.timed([sys.executable, "-m", "collectors", "fabric", "--routes", "--format", "text"], out=ours_text)
    ours, theirs = ours_text.read_text().splitlines(), theirs_text.read_text().splitlines()
    out = {"ours_s": result["seconds"], "ours_lines": len(ours), "theirs_lines": len(theirs)}
    if ours == theirs:
        out["identical"] = True
        return out
    out["identical"] = False
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            out["first"] = {"line": i + 1, "ours": a, "theirs": b}
            break
    else:
        i = min(len(ours), len(theirs))
        out["first"] = {"line": i + 1, "ours": (ours[i:] or [""])[0], "theirs": (theirs[i:] or [""])[0]}
    # ibroute reads the blocks below LinearFDBTop's, not the one holding it: when the top LID starts a block
    # (top % 64 == 0) it never prints that LID. Ours without those lines (and their count) against theirs:
    trimmed, top = [], None
    for line in ours:
        m = re.match(r"Unicast lids \[0x0-(0x[0-9a-f]+)\]", line)
        if m:
            top = int(m.group(1), 16)
        if top is not None and top % 64 == 0 and line.startswith(f"0x{top:04x} "):
            continue
        if top is not None and top % 64 == 0 and line.endswith(" valid lids dumped "):
            line = f"{int(line.split()[0]) - 1} valid lids dumped "
        trimmed.append(line)
    out["identical_but_top"] = trimmed == theirs
    out["switches_differing"] = sum(a != b for a, b in zip(chunks(ours), chunks(theirs), strict=False))
    return out


def chunks(lines: list[str]) -> list[list[str]]:
    """ibroute's text, one list of lines a switch."""
    out: list[list[str]] = []
    for line in lines:
        if line.startswith("Unicast lids") or not out:
            out.append([])
        out[-1].append(line)
    return out


def measure_ibtracert(sim: Simulated, snap: dict, one_cpu: int) -> dict:
    """TRACE_PAIRS random host pairs, `ibtracert SRC DST`, as scheduled and on one CPU, alternated."""
    cols = {c: i for i, c in enumerate(snap["ports"]["columns"])}
    cas = {i for i, n in enumerate(snap["nodes"]["rows"]) if n[1] == 1}
    lids = sorted(r[cols["lid"]] for r in snap["ports"]["rows"] if r[cols["node"]] in cas and r[cols["lid"]])
    rng = random.Random(35)
    pairs = [tuple(rng.sample(lids, 2)) for _ in range(TRACE_PAIRS)]
    out = {"scheduled": [], "one_cpu": [], "pairs": len(pairs)}
    sim.timed(["ibtracert", str(pairs[0][0]), str(pairs[0][1])])  # untimed first
    for k, (src, dst) in enumerate(pairs):
        steps = [("scheduled", None), ("one_cpu", one_cpu)]
        for key, cpu in steps if k % 2 == 0 else steps[::-1]:
            out[key].append(sim.timed(["ibtracert", str(src), str(dst)], cpu=cpu)["seconds"])
    return out


# -- Django in a child process ---------------------------------------------------------------------
def setup_django(db_path: Path) -> float:
    from django.core.management.utils import get_random_secret_key

    os.environ["SECRET_KEY"] = get_random_secret_key()
    os.environ["DJANGO_SETTINGS_MODULE"] = "fabricweb.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    start = time.perf_counter()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return time.perf_counter() - start


def run_child(scratch: Path, args: list[str], procs: list) -> dict:
    """This script in a child process (Django only there), its last result line."""
    before = load()
    with open(scratch / f"child-{args[0].strip('-')}-{args[-1]}.err", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO,
            env=quiet_env(os.environ),
        )  # fmt: skip
        procs.append(proc)
        lines = [line for line in proc.stdout if line.startswith(PREFIX)]
        code = proc.wait()
    if code != 0 or not lines:
        tail = (scratch / f"child-{args[0].strip('-')}-{args[-1]}.err").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"child {' '.join(args[:1])} failed ({code}):\n{tail}")
    return json.loads(lines[-1][len(PREFIX) :]) | {"load_before": before, "load_after": load()}


# -- part 1: storing the tables ----------------------------------------------------------------------
def ingest_child(scratch: str, runs: int) -> int:
    scratch = Path(scratch)
    migrate_s = setup_django(scratch / "ingest.sqlite3")
    import fabricweb.fabric.ingest as fabric_ingest
    from fabricweb import heap
    from fabricweb.fabric.models import SwitchRoutes
    from fabricweb.fabric.paths import RouteGraph

    full = json.loads((scratch / "full-routes.json").read_text())
    clock: dict[str, float] = {}

    def timed(name: str, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                clock[name] = time.perf_counter() - start

        return wrapper

    fabric_ingest.store_routes = timed("store_routes", fabric_ingest.store_routes)
    fabric_ingest.parse_fabric = timed("parse", fabric_ingest.parse_fabric)
    heap.settle()  # as `manage.py ingest` does
    out: dict = {"migrate_s": migrate_s, "with": [], "without": []}
    k = 0

    def ingest(with_routes: bool) -> dict:
        nonlocal k
        when = T0 + k * STEP
        k += 1
        snap = {**full, "collected_at": when.isoformat().replace("+00:00", "Z")}
        if not with_routes:
            del snap["routes"]
        clock.clear()
        reset_hwm()
        start = time.perf_counter()
        result = fabric_ingest.ingest_fabric(snap, now=when + PROMPT)
        seconds = time.perf_counter() - start
        if result.status != "stored":
            raise RuntimeError(f"sweep {k} not stored: {result.status} {result.note}")
        return {
            "seconds": seconds,
            "parse_s": clock["parse"],
            "store_routes_s": clock["store_routes"],
            "tables": result.routes,
            "ports": result.ports,
            "hwm_kb": proc_kb("VmHWM"),
        }

    out["first"] = ingest(True)
    ingest(True)
    ingest(False)
    for run in range(runs):
        pair = [("with", True), ("without", False)]
        for key, flag in pair if run % 2 == 0 else pair[::-1]:
            out[key].append(ingest(flag))
    stored = list(SwitchRoutes.objects.values_list("lft", flat=True))
    out["stored_tables"], out["stored_bytes"] = len(stored), sum(len(bytes(t)) for t in stored)

    # Ours per path on this same fabric: every host at once (one job of all), and TRACE_PAIRS two-host jobs.
    graph = RouteGraph.load()
    hosts = sorted(graph.ends_of)
    walks = []
    for _ in range(runs):
        start = time.perf_counter()
        paths = graph.paths(hosts)
        walks.append(time.perf_counter() - start)
    n = len(hosts)
    rng = random.Random(35)
    pairs = [rng.sample(hosts, 2) for _ in range(TRACE_PAIRS)]
    start = time.perf_counter()
    for pair in pairs:
        graph.paths(pair)
    out["graph"] = {
        "hosts": n,
        "pairs": n * (n - 1),
        "walk_s": walks,
        "links": len(paths.links),
        "findings": len(paths.findings),
        "two_host_s": (time.perf_counter() - start) / len(pairs),
    }
    out["hwm_end_kb"] = proc_kb("VmHWM")
    emit(out)
    return 0


# -- part 2: the synthetic fat tree --------------------------------------------------------------------
def fat_tree() -> dict:
    """The fat tree as plain values: switches, hosts, links (both ends: GUID, port, label) and the tables.

    Host d (1..4000, cn0001..cn4000) is on pod P = (d-1)//400, leaf L = (d-1)//20 % 20, port (d-1) % 20 + 1,
    LID d. A leaf's ports 21..40 go to its pod's 20 aggregation switches (agg k's port L+1); agg k's ports
    21..40 to the cores of group k (core k-(u%5), port 4P + u//5 + 1). Up/down routing: a leaf sends a LID
    not its own up by port 21 + d % 20, an aggregation switch down to the leaf in its pod else up by
    21 + (d // 20) % 20, a core down to pod P by port 4P + d % 4 + 1. Switch LIDs 4001..4500: each switch
    routes its own to port 0; walks to them are not asked, so other switches leave them at 255."""
    import numpy as np

    switches = []  # (name, guid, lid)

    def switch(name: str) -> int:
        switches.append((name, f"0x{0xB8599F0300000000 + len(switches) + 1:016x}", HOSTS + len(switches) + 1))
        return len(switches) - 1

    leaf, agg, core = {}, {}, {}
    for p in range(PODS):
        for i in range(LEAVES):
            leaf[p, i] = switch(f"leaf{p}-{i}")
        for k in range(AGGS):
            agg[p, k] = switch(f"agg{p}-{k}")
    for k in range(CORE_GROUPS):
        for c in range(CORES):
            core[k, c] = switch(f"core{k}-{c}")
    hosts = []  # (name, guid, lid, leaf index, leaf port)
    links = []  # ((guid, port, label), (guid, port, label), inter_switch)

    def end(s: int, port: int) -> tuple[str, int, str]:
        return (switches[s][1], port, f"{switches[s][0]} port {port}")

    for p in range(PODS):
        for i in range(LEAVES):
            for h in range(HOSTS_PER_LEAF):
                d = len(hosts) + 1
                name, guid = f"cn{d:04d}", f"0x0c42a10300{d:06x}"
                hosts.append((name, guid, d, leaf[p, i], h + 1))
                links.append(((guid, 1, f"{name} mlx5_0 port 1"), end(leaf[p, i], h + 1), False))
            for k in range(AGGS):
                links.append((end(leaf[p, i], 21 + k), end(agg[p, k], i + 1), True))
        for k in range(AGGS):
            for u in range(20):
                links.append((end(agg[p, k], 21 + u), end(core[k, u % 5], p * 4 + u // 5 + 1), True))
    width = HOSTS + len(switches) + 1
    d = np.arange(width)
    host = (d >= 1) & (d <= HOSTS)
    pod, row, port = (d - 1) // 400, (d - 1) // 20 % 20, (d - 1) % 20 + 1  # of host LID d
    tables = []
    for name, _, lid in switches:
        kind, p, i = re.match(r"(leaf|agg|core)(\d+)-(\d+)", name).groups()
        p, i = int(p), int(i)
        if kind == "leaf":
            t = np.where((pod == p) & (row == i), port, 21 + d % 20)
        elif kind == "agg":
            t = np.where(pod == p, row + 1, 21 + (d // 20) % 20)
        else:
            t = pod * 4 + d % 4 + 1
        t = np.where(host, t, 255).astype(np.uint8)
        t[lid] = 0
        tables.append(t.tobytes())
    return {"switches": switches, "hosts": hosts, "links": links, "tables": tables}


def store_fat_tree(tree: dict) -> dict:
    """The fat tree's rows, as fabric ingest and the node agents would have left them, by bulk_create."""
    from fabricweb.fabric.models import FabricNode, Link, SwitchRoutes
    from fabricweb.inventory.models import Device, Node, Port

    now, batch = T0, 2000
    sw_nodes = [Node(name=n, kind=Node.Kind.SWITCH, guid=g, first_seen_at=now) for n, g, _ in tree["switches"]]
    host_nodes = [Node(name=h[0], kind=Node.Kind.HOST, first_seen_at=now) for h in tree["hosts"]]
    Node.objects.bulk_create(sw_nodes + host_nodes, batch_size=batch)
    sw_dev = [Device(node=n, name="switch", node_guid=g, first_seen_at=now) for n, (_, g, _) in
              zip(sw_nodes, tree["switches"], strict=True)]  # fmt: skip
    host_dev = [Device(node=n, name="mlx5_0", node_guid=h[1], node_desc=f"{h[0]} mlx5_0", first_seen_at=now)
                for n, h in zip(host_nodes, tree["hosts"], strict=True)]  # fmt: skip
    Device.objects.bulk_create(sw_dev + host_dev, batch_size=batch)
    up = {"state_id": 4, "state_name": "ACTIVE", "phys_state_id": 5, "phys_state_name": "LinkUp",
          "link_layer": "InfiniBand", "rate_gbps": 400.0, "lanes": 4, "speed": "NDR", "best_speed": "NDR",
          "best_lanes": 4, "ever_up": True, "first_seen_at": now}  # fmt: skip
    ports: dict[tuple[str, int], Port] = {}
    for dev, (_, guid, lid) in zip(sw_dev, tree["switches"], strict=True):
        for number in range(SWITCH_PORTS + 1):
            ports[guid, number] = Port(device=dev, number=number, lid=lid, port_guid=guid, **up)
    for dev, (_, guid, lid, _, _) in zip(host_dev, tree["hosts"], strict=True):
        ports[guid, 1] = Port(device=dev, number=1, lid=lid, lmc=0, port_guid=guid, **up)
    Port.objects.bulk_create(list(ports.values()), batch_size=batch)
    fabric_nodes = [
        FabricNode(guid=g, node_type=2, num_ports=SWITCH_PORTS, description=f"MF0;{n}:MQM9790-NS2F/U1", lid=lid,
                   node=node, first_seen_at=now)
        for (n, g, lid), node in zip(tree["switches"], sw_nodes, strict=True)
    ] + [FabricNode(guid=h[1], node_type=1, num_ports=1, description=f"{h[0]} mlx5_0", first_seen_at=now)
         for h in tree["hosts"]]  # fmt: skip
    FabricNode.objects.bulk_create(fabric_nodes, batch_size=batch)
    links = []
    for one, two, inter_switch in tree["links"]:
        a, b = sorted((one, two))  # a before b by GUID, then port, as fabric ingest orders them
        links.append(Link(a_guid=a[0], a_port=a[1], b_guid=b[0], b_port=b[1], a=ports[a[:2]], b=ports[b[:2]],
                          a_label=a[2], b_label=b[2], speed="NDR", lanes=4, capable_speed="NDR", capable_lanes=4,
                          inter_switch=inter_switch, first_seen_at=now))  # fmt: skip
    Link.objects.bulk_create(links, batch_size=batch)
    routes = [
        SwitchRoutes(switch=fn, lid=fn.lid, lft=table, read_at=now)
        for fn, table in zip(fabric_nodes, tree["tables"], strict=False)
    ]
    SwitchRoutes.objects.bulk_create(routes, batch_size=500)
    return {"ports": len(ports), "links": len(links), "tables": len(routes), "fabric_nodes": len(fabric_nodes)}


def job_mix(mix: str, seed: int = 35) -> list[list[str]]:
    """1,000 jobs' node names (cn0001..cn4000)."""
    rng = random.Random(seed)
    names = [f"cn{d:04d}" for d in range(1, HOSTS + 1)]
    if mix == "oversubscribed":  # log-uniform 2..1,000, the first 1,000; each on random nodes, overlapping
        sizes = [1000] + [round(2 * 500 ** rng.random()) for _ in range(999)]
        return [rng.sample(names, size) for size in sizes]
    # packed: a full cluster, disjoint. One 1,000-node job, a few of 100-256, the rest heavy-tailed (Pareto,
    # alpha 1.5, from 2, at most 64), shrunk at random until all fit in the 4,000 hosts.
    sizes = [1000, 256, 160, 100] + [min(64, max(2, int(2 * rng.paretovariate(1.5)))) for _ in range(996)]
    while sum(sizes) > HOSTS:
        i = rng.randrange(4, len(sizes))
        if sizes[i] > 2:
            sizes[i] -= 1
    rng.shuffle(names)
    jobs, at = [], 0
    for size in sizes:
        jobs.append(names[at : at + size])
        at += size
    rng.shuffle(jobs)
    return jobs


def jobs_child(scratch: str, mix: str, runs: int, changed_runs: int, profile: bool) -> int:
    scratch = Path(scratch)
    out: dict = {"mix": mix}
    out["migrate_s"] = setup_django(scratch / f"jobs-{mix}.sqlite3")
    from django.db import connection

    import fabricweb.jobs.refresh as jobs_refresh
    from fabricweb import heap
    from fabricweb.fabric.models import SwitchRoutes
    from fabricweb.fabric.paths import RouteGraph
    from fabricweb.jobs.models import Job, JobLink
    from fabricweb.jobs.sources import JobSource, RunningJob

    start = time.perf_counter()
    tree = fat_tree()
    out["tree_s"] = time.perf_counter() - start
    start = time.perf_counter()
    out["rows"] = store_fat_tree(tree)
    out["store_s"] = time.perf_counter() - start
    out["switches"], out["hosts"], out["table_lids"] = len(tree["switches"]), len(tree["hosts"]), len(tree["tables"][0])
    del tree
    jobs = job_mix(mix)
    out["jobs"], out["job_nodes"] = len(jobs), sum(len(j) for j in jobs)
    out["distinct_nodes"] = len({n for j in jobs for n in j})
    out["pairs"] = sum(len(j) * (len(j) - 1) for j in jobs)
    sizes = sorted((len(j) for j in jobs), reverse=True)
    out["sizes"] = {"largest": sizes[:6], "median": statistics.median(sizes), "of_2": sizes.count(2)}

    def running(job_id: str, nodes: list[str]) -> RunningJob:
        return RunningJob(job_id, f"bench-{job_id}", "bench", "batch", tuple(nodes), T0)

    class StaticSource(JobSource):
        name = "bench"

        def __init__(self) -> None:
            self.jobs = [running(str(i + 1), nodes) for i, nodes in enumerate(jobs)]

        def running(self) -> list[RunningJob]:
            return list(self.jobs)

    source = StaticSource()
    clock: dict[str, float] = defaultdict(float)
    where = {"in_load": False}

    class TimedGraph(RouteGraph):
        def __init__(self, *args) -> None:
            start = time.perf_counter()
            super().__init__(*args)
            clock["build"] += time.perf_counter() - start

        @classmethod
        def load(cls) -> RouteGraph:
            start = time.perf_counter()
            where["in_load"] = True
            try:
                return super().load()
            finally:
                where["in_load"] = False
                clock["load"] += time.perf_counter() - start

        def paths(self, hosts):
            start = time.perf_counter()
            try:
                return super().paths(hosts)
            finally:
                clock["walks"] += time.perf_counter() - start

    jobs_refresh.RouteGraph = TimedGraph

    def sql_timer(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            if not where["in_load"]:
                verb = sql.lstrip()[:6].upper()
                if "jobs_joblink" in sql and verb in ("DELETE", "INSERT"):
                    table = "joblink_" + verb.lower()
                else:
                    table = "job" if '"jobs_job"' in sql else "other"
                clock["sql_" + table] += time.perf_counter() - start
                clock["n_" + table] += 1

    links = JobLink.objects  # the one manager instance refresh() calls: its bulk_create timed, objects and all
    bulk_create = links.bulk_create

    def timed_bulk_create(objs, *args, **kwargs):
        start = time.perf_counter()
        try:
            return bulk_create(objs, *args, **kwargs)
        finally:
            clock["joblink_insert"] += time.perf_counter() - start

    links.bulk_create = timed_bulk_create

    rng = random.Random(36)
    names = [f"cn{d:04d}" for d in range(1, HOSTS + 1)]
    k = 0

    def refresh(kind: str) -> dict:
        nonlocal k
        k += 1
        clock.clear()
        reset_hwm()
        with connection.execute_wrapper(sql_timer):
            start = time.perf_counter()
            done = jobs_refresh.refresh(source, now=T0 + k * STEP)
            seconds = time.perf_counter() - start
        if done.error:
            raise RuntimeError(f"refresh: {done.error}")
        other = clock["sql_job"] + clock["sql_other"] + clock["sql_joblink_delete"]
        return {
            "kind": kind,
            "seconds": seconds,
            "walked": done.walked,
            "new": done.new,
            "ended": done.ended,
            "load_s": clock["load"],
            "build_s": clock["build"],
            "walks_s": clock["walks"],
            "joblink_insert_s": clock["joblink_insert"],
            "sql_joblink_insert_s": clock["sql_joblink_insert"],
            "sql_joblink_delete_s": clock["sql_joblink_delete"],
            "sql_job_s": clock["sql_job"],
            "sql_other_s": clock["sql_other"],
            "statements": {k[2:]: int(v) for k, v in clock.items() if k.startswith("n_")},
            "rest_s": seconds - clock["load"] - clock["walks"] - clock["joblink_insert"] - other,
            "hwm_kb": proc_kb("VmHWM"),
        }

    def tables_changed() -> None:  # as a sweep that read the tables again leaves them
        SwitchRoutes.objects.update(read_at=T0 + (k + 1) * STEP)

    heap.settle()  # as a Celery worker's long-lived process would be: its heap frozen out of collections
    out["rss_before_kb"] = proc_kb("VmRSS")
    out["first"] = refresh("first")
    out["joblinks"] = JobLink.objects.count()
    out["job_rows"] = Job.objects.count()
    rows = Job.objects.values_list("findings", "unmapped")
    out["findings"] = sum(1 for findings, unmapped in rows if findings)  # the tables are sound: both 0
    out["unmapped"] = sum(1 for findings, unmapped in rows if unmapped)
    series = defaultdict(list)
    for run in range(runs):
        if run < changed_runs:
            tables_changed()
            series["changed"].append(refresh("changed"))
        source.jobs.append(running(f"new{run}", rng.sample(names, NEW_JOB_NODES)))
        series["new"].append(refresh("new"))
        series["unchanged"].append(refresh("unchanged"))
        source.jobs.pop()
        series["ended"].append(refresh("ended"))
    out["joblinks_end"] = JobLink.objects.count()
    out.update(series)
    if profile:
        tables_changed()
        k += 1
        profiler = cProfile.Profile()
        with connection.execute_wrapper(sql_timer):
            profiler.enable()
            jobs_refresh.refresh(source, now=T0 + k * STEP)
            profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(14)
        stats.sort_stats("cumulative").print_stats(22)
        out["profile"] = text.getvalue()
    out["hwm_end_kb"] = proc_kb("VmHWM")
    emit(out)
    return 0


# -- report --------------------------------------------------------------------------------------------
def secs(values: list[dict], key: str = "seconds", fmt: str = "{:.3f}") -> str:
    return spread([v[key] for v in values], fmt)


def ms(values: list[dict], key: str = "seconds") -> str:
    return spread([v[key] * 1000 for v in values], "{:.1f}")


def ratio(a: list[dict], b: list[dict], ka: str = "seconds", kb: str = "seconds", fmt: str = "{:.2f}x") -> str:
    """a / b, run by run (the first len(b) runs where b has fewer)."""
    return spread([x[ka] / y[kb] for x, y in zip(a, b, strict=False)], fmt)


def med(values: list[dict], key: str = "seconds") -> float:
    return statistics.median(v[key] for v in values)


def report_ibsim(r: dict, runs: int) -> None:
    first = r["ours"][0]
    print(
        f"\n1. forwarding tables of {r['switches']} switches ({first['table_lids']:.0f} LIDs a table; "
        f"{runs} runs, alternated; load {r['load_before']} before, {r['load_after']} after; min / median / max):"
    )
    print(f"  {'':<46}{'seconds':<26}{'its CPU s':<26}{'ibsim CPU s':<24}other work, CPUs")
    print(f"  {'ours: Routes (SwitchInfo + LFT blocks)':<46}{secs(r['ours'], 'routes_s'):<26}")
    for label, key in (
        ("theirs: ibroute loop, ibsim + loop on 1 CPU", "ibroute@1"),
        ("theirs: ibroute loop, as scheduled", "ibroute"),
        ("dump_fts (discovery + tables), 1 CPU", "dump_fts@1"),
        ("dump_fts, as scheduled", "dump_fts"),
    ):
        v = r[key]
        print(
            f"  {label:<46}{secs(v):<26}{secs(v, 'cpu_s'):<26}{secs(v, 'ibsim_cpu_s'):<24}{secs(v, 'others', '{:.2f}')}"
        )
    ours_d = [{"seconds": o["discovery_s"] + o["routes_s"]} for o in r["ours"]]
    print(f"  {'ours: discovery + Routes (for dump_fts)':<46}{secs(ours_d):<26}")
    print(
        f"  {'ours: the whole full sweep with routes':<46}{secs(r['ours']):<26}"
        f"(its other work CPUs {secs(r['ours'], 'others', '{:.2f}')})"
    )
    print(
        f"  ours / ibroute loop, same run: on 1 CPU {ratio(r['ours'], r['ibroute@1'], 'routes_s', fmt='{:.4f}x')}, as "
        f"scheduled {ratio(r['ours'], r['ibroute'], 'routes_s', fmt='{:.4f}x')} ({len(r['ibroute'])} runs); discovery "
        f"+ Routes / dump_fts: 1 CPU {ratio(ours_d, r['dump_fts@1'])}, as scheduled {ratio(ours_d, r['dump_fts'])}"
    )
    print(
        f"  Routes: {first['routes_mads']:,} MADs ({first['queries']:,} in the whole sweep), errors "
        f"{max(v['errors'] for v in r['ours'])}; {med(r['ours'], 'routes_s') / med(r['ours']):.1%} of the full "
        "sweep with routes (medians)"
    )
    print(
        f"  routes section {first['routes_bytes']:,} B of JSON ({first['routes_bytes'] / r['switches']:,.0f} B a "
        f"switch; snapshot {first['snapshot_bytes']:,} B with it, {first['tables']} tables)"
    )
    rss = max(v["maxrss_kb"] for v in r["ibroute@1"] + r["ibroute"])
    print(
        f"  peak RSS: the collector child {r['collector']['hwm_kb'] / 1024:.0f} MB (VmHWM, three Sweepers), "
        f"the ibroute loop {rss / 1024:.0f} MB, dump_fts {max(v['maxrss_kb'] for v in r['dump_fts']) / 1024:.0f} MB"
    )
    c = r["compare"]
    if c["identical"]:
        verdict = "identical"
    else:
        f = c["first"]
        verdict = f"differ at line {f['line']}: ours {f['ours']!r}, theirs {f['theirs']!r}"
        if c["identical_but_top"]:
            verdict += (
                f"; identical once ibroute's missing top LID is allowed for ({c['switches_differing']} switches: "
                "ibroute never prints a table's top LID when it starts a 64-LID block)"
            )
    print(
        f"  `collectors fabric --routes --format text` ({c['ours_s']:.2f} s, {c['ours_lines']:,} lines) against the "
        f"ibroute loop ({c['theirs_lines']:,} lines): {verdict}"
    )
    t = r["trace"]
    print(
        f"  ibtracert, {t['pairs']} host pairs, a call: as scheduled {spread(t['scheduled'], '{:.3f}')} s, "
        f"on 1 CPU {spread(t['one_cpu'], '{:.3f}')} s"
    )


def report_ingest(r: dict, runs: int) -> None:
    print(
        f"\n1b. storing the tables: ingest_fabric of that sweep, SQLite (WAL, synchronous=NORMAL), {runs} runs "
        f"alternated (load {r['load_before']} before, {r['load_after']} after; migrate {r['migrate_s']:.1f} s):"
    )
    w, wo = r["with"], r["without"]
    print(
        f"  with the routes section    {secs(w)} s; store_routes {ms(w, 'store_routes_s')} ms, "
        f"parse {ms(w, 'parse_s')} ms"
    )
    print(f"  without it                 {secs(wo)} s; parse {ms(wo, 'parse_s')} ms")
    share = [a["store_routes_s"] / a["seconds"] for a in w]
    print(
        f"  with - without (medians) {(med(w) - med(wo)) * 1000:.0f} ms; store_routes' share of an ingest "
        f"{spread(share, '{:.1%}')}; {w[0]['tables']} tables, {r['stored_bytes']:,} B stored; "
        f"{w[0]['ports']:,} switch ports a sweep; first ingest (creates everything) {r['first']['seconds']:.2f} s"
    )
    print(f"  peak RSS of the ingest process {max(v['hwm_kb'] for v in w + wo) / 1024:.0f} MB")
    g = r["graph"]
    per = statistics.median(g["walk_s"]) / g["pairs"]
    print(
        f"  RouteGraph on this fabric: every host at once ({g['hosts']} hosts, {g['pairs']:,} paths, "
        f"{g['links']:,} links, {g['findings']} findings) {spread(g['walk_s'], '{:.4f}')} s = {per * 1e9:.0f} ns a "
        f"path; a two-host job {g['two_host_s'] * 1e6:.0f} µs"
    )


def report_jobs(r: dict, runs: int, trace: dict | None) -> None:
    rows = r["rows"]
    print(
        f"\n2. jobs, mix {r['mix']!r}: {r['jobs']:,} jobs, {r['job_nodes']:,} job-node pairs on "
        f"{r['distinct_nodes']:,} distinct hosts, {r['pairs']:,} (source port, destination LID) pairs; sizes: "
        f"largest {r['sizes']['largest']}, median {r['sizes']['median']:g}, {r['sizes']['of_2']} of 2 nodes"
    )
    print(
        f"  fat tree: {r['switches']} switches x {SWITCH_PORTS} ports, {r['hosts']:,} hosts, {rows['links']:,} links, "
        f"{r['table_lids']:,} LIDs a table; built {r['tree_s']:.1f} s, stored {r['store_s']:.1f} s "
        f"(SQLite; migrate {r['migrate_s']:.1f} s); load {r['load_before']} before, {r['load_after']} after"
    )
    f = r["first"]
    print(
        f"  first refresh (every job new): {f['seconds']:.2f} s; JobLink rows {r['joblinks']:,} "
        f"({r['joblinks'] / r['jobs']:,.0f} a job), peak RSS {f['hwm_kb'] / 1024:.0f} MB; jobs with routing findings "
        f"{r['findings']}, with unmapped nodes {r['unmapped']}"
    )
    print(
        f"  {runs} runs (min / median / max)"
        + (f"; after a table change: {len(r['changed'])} (--stress-runs)" if len(r["changed"]) != runs else "")
        + ":"
    )
    for key, label, goal in (
        ("changed", "after a table change (all walked)", GOAL_REFRESH_CHANGED_S),
        ("new", f"one new job ({NEW_JOB_NODES} nodes)", GOAL_REFRESH_NEW_S),
        ("unchanged", "nothing changed", None),
        ("ended", "that job ended", None),
    ):
        v = r[key]
        verdict = ""
        if goal is not None:
            verdict = f"goal < {goal:g} s: " + ("met" if med(v) < goal else "NOT met")
            verdict += f" ({sum(x['seconds'] < goal for x in v)}/{len(v)} within)"
        print(
            f"  refresh {label:<36}{secs(v):<26}walked {v[0]['walked']:<6}peak RSS "
            f"{max(x['hwm_kb'] for x in v) / 1024:>5.0f} MB   {verdict}"
        )
    print("  where the time goes, medians (s; SQL: the statements' execution, in connection.execute_wrapper):")
    print(
        f"    {'':<11}{'load: rows':<12}{'build':<8}{'walks':<8}{'JobLink insert':<16}{'(its SQL)':<11}"
        f"{'JobLink delete':<16}{'Job SQL':<9}{'other SQL':<11}{'rest':<8}statements"
    )
    for key in ("first", "changed", "new", "unchanged", "ended"):
        v = [r["first"]] if key == "first" else r[key]
        count = ", ".join(f"{k} {n}" for k, n in sorted(v[0]["statements"].items()))
        print(
            f"    {key:<11}{med(v, 'load_s') - med(v, 'build_s'):<12.3f}{med(v, 'build_s'):<8.3f}"
            f"{med(v, 'walks_s'):<8.3f}{med(v, 'joblink_insert_s'):<16.3f}{med(v, 'sql_joblink_insert_s'):<11.3f}"
            f"{med(v, 'sql_joblink_delete_s'):<16.3f}{med(v, 'sql_job_s'):<9.3f}{med(v, 'sql_other_s'):<11.3f}"
            f"{med(v, 'rest_s'):<8.3f}{count}"
        )
    per = med(r["changed"], "walks_s") / r["pairs"]
    line = f"  ours per path: walks {med(r['changed'], 'walks_s'):.3f} s / {r['pairs']:,} pairs = {per * 1e9:.1f} ns"
    if trace:
        one, sched = statistics.median(trace["one_cpu"]), statistics.median(trace["scheduled"])
        line += (
            f"; ibtracert a path (part 1's fabric, medians): {one * 1e3:.1f} ms on 1 CPU, {sched * 1e3:.1f} ms as "
            f"scheduled: {one / per:,.0f}x and {sched / per:,.0f}x ours"
        )
    print(line)
    print(f"  JobLink rows at the end {r['joblinks_end']:,}; peak RSS of the process {r['hwm_end_kb'] / 1024:.0f} MB")
    if r.get("profile"):
        print(f"  cProfile of one more refresh after a table change:\n{r['profile']}")


def report_poll(r: dict | None, jobs: list[dict]) -> None:
    print("\n3. what the routes add to a poll when nothing changed:")
    if r:
        i, n = r["interval"], r["none"]
        read = sum(1 for v in i if v["routes_read"])
        ratios = [a["seconds"] / b["seconds"] for a, b in zip(i, n, strict=True)]
        added = med(i) / med(n) - 1
        due = med(i, "due_s")
        verdict = "met" if due / med(n) <= GOAL_POLL_ADDED else "NOT met"
        print(
            f"  full sweep, routes_interval={INTERVAL:g} after the first read: {secs(i)} s (tables read again in "
            f"{read} of {len(i)})\n  full sweep, routes_interval=None:                       {secs(n)} s\n"
            f"  ratio, same run {spread(ratios, '{:.3f}x')}, medians {added:+.1%}; what it adds, routes_due (the "
            f"topology signature) timed in the sweep: {spread([v['due_s'] * 1000 for v in i], '{:.1f}')} ms = "
            f"{due / med(n):.2%} of a sweep: goal <= {GOAL_POLL_ADDED:.0%}: {verdict} (counters-only polls never "
            "look at the tables)"
        )
    for j in jobs:
        u = j["unchanged"]
        share = med(u) / POLL_S
        print(
            f"  central, mix {j['mix']!r}: refresh() with nothing changed {secs(u)} s = {share:.2%} of the "
            f"{POLL_S:g} s poll; goal <= {GOAL_POLL_ADDED:.0%}: " + ("met" if share <= GOAL_POLL_ADDED else "NOT met")
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--scheduled-runs", type=int, default=1, help="runs that also time the ibroute loop unpinned (~30 s each)"
    )
    parser.add_argument("--mix", default=",".join(MIXES), help="job mixes: packed, oversubscribed (comma-separated)")
    parser.add_argument(
        "--stress-runs", type=int, default=1, help="oversubscribed mix: refreshes after a table change (~70 s each)"
    )
    parser.add_argument("--skip-ibsim", action="store_true", help="part 2 only (and part 3's central side)")
    parser.add_argument("--profile", action="store_true", help="cProfile one more refresh after a table change")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, databases)")
    parser.add_argument("--sweeper", help=argparse.SUPPRESS)
    parser.add_argument("--ingest", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", help=argparse.SUPPRESS)
    parser.add_argument("--jobs-mix", help=argparse.SUPPRESS)
    parser.add_argument("--changed-runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweeper:
        return sweeper_child(args.sweeper)
    if args.ingest:
        return ingest_child(args.ingest, args.runs)
    if args.jobs:
        return jobs_child(args.jobs, args.jobs_mix, args.runs, args.changed_runs, args.profile)

    mixes = [m.strip() for m in args.mix.split(",") if m.strip()]
    if unknown := [m for m in mixes if m not in MIXES]:
        sys.exit(f"--mix: unknown {', '.join(unknown)} (packed, oversubscribed)")
    if not args.skip_ibsim:
        tools = ("ibsim", "ibsim-run", "opensm", "ibroute", "ibtracert", "dump_fts")
        if missing := [t for t in tools if not shutil.which(t)]:
            sys.exit(f"needs ibsim-utils, opensm and infiniband-diags: {', '.join(missing)} not found; or --skip-ibsim")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops everything
    scratch = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    sim = None if args.skip_ibsim else Simulated(scratch)
    children: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        print(f"machine: {machine()}; load {load()}", flush=True)
        ibsim = ingest = None
        if sim is not None:
            sim.start()
            print(f"fabric written and programmed by opensm -o in {time.monotonic() - started:.0f} s", flush=True)
            ibsim = measure_ibsim(sim, args.runs, min(args.scheduled_runs, args.runs))
            sim.stop()
            report_ibsim(ibsim, args.runs)
            print(f"  (`{' '.join(SIM_COMMAND)}`)", flush=True)
            ingest = run_child(scratch, ["--ingest", str(scratch), "--runs", str(args.runs)], children)
            report_ingest(ingest, args.runs)
            sys.stdout.flush()
        jobs = []
        for mix in mixes:
            changed = args.runs if mix == "packed" else min(args.stress_runs, args.runs)
            cmd = ["--jobs", str(scratch), "--runs", str(args.runs), "--changed-runs", str(changed)]
            cmd += ["--profile"] if args.profile else []
            jobs.append(run_child(scratch, [*cmd, "--jobs-mix", mix], children))
            report_jobs(jobs[-1], args.runs, ibsim["trace"] if ibsim else None)
            sys.stdout.flush()
        report_poll(ibsim, jobs)
        print(f"\n(in {time.monotonic() - started:.0f} s)")
    finally:
        for proc in children:
            stop(proc)
        if sim is not None:
            sim.stop()
        if args.keep:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
