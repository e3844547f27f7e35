"""The fabric collector on a 256-switch fabric under ibsim, side by side with ibnetdiscover + ibqueryerrors,
and what ingesting its sweeps costs per switch port against a host port.

    source /tmp/testenv.sh     # or: eval "$(scripts/test-services start)"   (TEST_POSTGRES_URL)
    .venv/bin/python bench/bench_fabric.py [--runs 5] [--warm 10] [--db URL] [--no-ingest] [--keep]
                                           [--against DIR [--rounds R]]

The fabric: `python -m collectors simulate --out DIR --nodes 471 --ports 1 --hcas 1 --fabric
--switch-ports 40 --leaves 170 --spines 86 --once` in a scratch directory under /tmp: 256 switches of 40
ports (170 leaves, 86 spines: the fewest spines simulate allows for 170 leaves whose top 20 ports go up),
and 448 InfiniBand hosts of one port (471 simulated nodes, of which simulate makes 5% RoCE hosts, not on
the fabric). ibsim runs it on its own IBSIM_SOCKNAME; `ibsim-run opensm -o` assigns the LIDs, then
`ibsim-run opensm` keeps running (ibqueryerrors needs its SA) for every timed run, ours and theirs alike.
Everything the bench starts is stopped at the end, whatever happens; nothing is written into the repo.

1-3. The collector (collectors.mads.sweep.Sweeper on open_port(), as the fabric agent holds them)
   runs in a child process under ibsim-run and sweeps when told: one untimed full sweep first, then
   each run a full sweep and a counters-only poll, alternated with `ibsim-run ibnetdiscover` and
   `ibsim-run ibqueryerrors --data` as scheduled, and again with each tool and ibsim pinned to one CPU
   (see ONE_CPU below; the order flips every run). Ours is the sweep's own time in the running
   collector; theirs is each tool's wall time, start to exit (they are one-shot programs). Also: CPU
   seconds of the sweeping process and of ibsim in each, what other processes used meanwhile (Others),
   and peak RSS (the collector's VmHWM from /proc; the tools' ru_maxrss from wait4). The collector runs with
   the fabric agent's garbage-collector settings (fabricweb/heap.py); --gc-compare adds a second collector
   process with Python's defaults, alternated. Each run also sweeps and polls reading every channel
   adapter's counters too (as if no host ran an agent), and what that adds per CA port (wall and
   CPU time, MADs, bytes) is set against what a switch port costs in the counters-only poll.
4. The snapshots' size: the JSON text as signed and sent (nodeauth.signed_kwargs), and as Redis holds the
   message (the fabric agent's own Celery app and FabricAgent.deliver, to a private redis-server).
5. In a child process on a throwaway PostgreSQL database (created, migrated with Django's migrate,
   dropped): (a) reading, as the ingest consumer reads a signed message's text (jsonread.json_text_loads) and
   checks it: the sweeps (parse_fabric) and the same hosts' snapshots in their wire form after an agent's first
   poll (each device's attributes as last sent), typed by the wire's quick path (quickwire.parse_wire), as
   the consumer types them; and as many ports of hosts of 8 one-port HCAs (--gpu-hosts, simulated apart from
   the ibsim fabric, InfiniBand only: the 100,000-port fabric's hosts in bench_scale.py), the same way (a link
   policy says they run 4X HDR: without it, --gpu-hosts-unruled, their ConnectX-6 ports stand below the 12X the
   ibsim hosts of that model train at, so each port holds a width-downgrade event and each HCA a PCIe one: hosts
   whose open events are judged at every poll);
   (b) storing, ingest_fabric per switch port (its parse_fabric included) against ingest_batch of the typed
   snapshots (100 a transaction, as the consumer's batches) per host port-sample of each host shape, in steady
   state: the first round (which creates everything) and --warm rounds untimed, then --runs rounds alternating
   host polls and sweeps. The hosts' counters
   move as collectors.sim moves them (two real polls, then each step again, as bench_ingest.py's
   --warm does), their hw_counters at every --hw-every'th poll only, as the agents read them (6, their
   default FABRIC_HW_COUNTERS_EVERY; 1 moves them at every poll, as this bench did until December 8th);
   ibsim's counters do not move, so each cabled switch port's traffic counters are
   moved by a fixed random step per sweep, so that neither side's samples are all zero deltas.
   Peak RSS of each store step: VmHWM after resetting it (/proc/self/clear_refs) before the step.
   `--against DIR` runs step 5 again with another checkout's fabricweb and collectors (a git worktree of the
   tree before) on the same fabric, snapshots and steps, R rounds of one child each, alternated, and prints
   each figure of both with the ratio of their medians.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# The ingest child of --against: that checkout's fabricweb and collectors, this bench's steps.
CODE_ENV = "BENCH_FABRIC_CODE"
if os.environ.get(CODE_ENV):
    sys.path.insert(0, os.environ[CODE_ENV])

from harness import running_redis, stop, wait_for  # noqa: E402

GOAL_FULL_S = 2.0
GOAL_COUNTERS_S = 1.0
GOAL_RATIO = 1.5
COLLECTOR = "fabric-bench"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEP = timedelta(seconds=10)
PROMPT = timedelta(milliseconds=100)  # from a snapshot's date to its storing
HOST_BATCH = 100  # snapshots per ingest_batch call: the consumer's default batch
EIGHT_HCAS = 8  # a GPU node's one-port HCAs (bench_scale.py's hosts)
# The host shapes ingest is measured on: the ibsim fabric's one-port hosts, and hosts of EIGHT_HCAS one-port HCAs.
HOST_SHAPES = ("host", "host8")
GPU_PREFIX = "gpu"  # before the 8-HCA hosts' simulated names
PREFIX = "BENCH "  # a child's result lines on stdout
LINK_UP = 5
# Counters that traffic moves on a cabled switch port (ibsim's stay still): the 64-bit ones and the wait.
MOVING = (
    "port_xmit_data_64", "port_rcv_data_64", "port_xmit_packets_64", "port_rcv_packets_64",
    "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
    "port_xmit_wait",
)  # fmt: skip


SERIES = (
    "full", "counters", "ibnetdiscover", "ibqueryerrors", "ibnetdiscover@1", "ibqueryerrors@1",
    "full+defaultgc", "counters+defaultgc", "full+cas", "counters+cas",
)  # fmt: skip
# ONE_CPU. The tools are synchronous: each MAD waits for ibsim's answer before the next. On a virtual
# machine whose CPUs halt when idle (KVM's haltpoll), every such round trip from one CPU to the other pays
# for waking the other, and on an otherwise idle 2-CPU guest the tools took 2-3x as long as on a busy one.
# So each run also times them with ibsim and the tool on one CPU (both pinned for the while): their best
# here, as fast as on a busy machine, and close to the 0.5 s the tools' environment notes give. The collector
# keeps 64 MADs in flight and is CPU-bound; pinning did not help it.


# -- small helpers -------------------------------------------------------------------------------
def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f})"


def proc_kb(field: str, pid: str | int = "self") -> int:
    m = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(m.group(1)) if m else 0


def reset_hwm() -> None:
    """Reset this process's VmHWM to its current RSS (Linux: 5 > /proc/self/clear_refs)."""
    Path("/proc/self/clear_refs").write_text("5")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all CPUs have spent busy since boot (/proc/stat: everything but idle and iowait)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = Path("/proc/stat").read_text().split()[1:9]
    return sum(int(v) for v in (user, nice, system, irq, softirq, steal)) / os.sysconf("SC_CLK_TCK")


class Others:
    """How busy the rest of the machine was during a step: CPUs used by processes other than `pids` and
    this one (with the children it has waited for), from /proc/stat. 0 is a quiet machine; the
    load average cannot tell, as it counts the bench's own processes too."""

    def __init__(self, pids) -> None:
        self.pids = pids

    def _ours(self) -> float:
        total = sum(os.times()[:4])  # this process and its waited-for children (the tools)
        for pid in self.pids():
            with contextlib.suppress(OSError):
                total += cpu_s(pid)
        return total

    def __enter__(self) -> Others:
        self.start, self.busy, self.ours = time.perf_counter(), machine_busy_s(), self._ours()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self.start
        other = (machine_busy_s() - self.busy) - (self._ours() - self.ours)
        self.cpus = max(other, 0.0) / wall


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    if not values:
        return "-"
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def emit(obj) -> None:
    print(PREFIX + json.dumps(obj), flush=True)


def read_reply(proc: subprocess.Popen) -> dict:
    for line in proc.stdout:
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX) :])
    raise RuntimeError(f"child exited (status {proc.wait()}) without an answer")


def machine() -> str:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    meminfo = Path("/proc/meminfo").read_text()
    m = re.search(r"MemTotal:\s+(\d+)", meminfo)
    mem = int(m.group(1)) // 1024 // 1024 if m else 0
    return f"{os.cpu_count()} CPUs ({model}), {mem} GiB"


# -- the fabric under ibsim ------------------------------------------------------------------------
class Simulated:
    """fabric.net written by `collectors simulate --fabric`, ibsim on it, opensm; stop() ends them all."""

    def __init__(self, scratch: Path, args: argparse.Namespace) -> None:
        self.dir = scratch / "sim"
        self.scratch = scratch
        self.procs: list[subprocess.Popen] = []
        self.ibsim: subprocess.Popen | None = None
        self.opensm: subprocess.Popen | None = None
        self.env = {
            **os.environ,
            "IBSIM_SOCKNAME": f"bench-fabric-{uuid.uuid4().hex[:10]}",
            "OSM_CACHE_DIR": str(scratch),  # not /var/cache/opensm: LIDs of this fabric only
        }
        self.command = [
            "python", "-m", "collectors", "simulate", "--out", "DIR", "--nodes", str(args.nodes), "--ports", "1",
            "--hcas", "1", "--fabric", "--switch-ports", str(args.switch_ports), "--leaves", str(args.leaves),
            "--spines", str(args.spines), "--once",
        ]  # fmt: skip

    def write(self) -> None:
        cmd = [sys.executable, *self.command[1:]]
        cmd[cmd.index("DIR")] = str(self.dir)
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        net = (self.dir / "fabric.net").read_text()
        self.switches = len(re.findall(r"^Switch\s", net, re.M))
        self.cas = len(re.findall(r"^(?:Hca|Ca)\s", net, re.M))
        self.switch_ports = sum(int(n) for n in re.findall(r"^Switch\s+(\d+)", net, re.M))
        self.hosts = sorted(set(re.findall(r'^(?:Hca|Ca)\s+\d+\s+"(\S+) ', net, re.M)))

    def start(self) -> None:
        log = open(self.scratch / "ibsim.log", "wb")  # noqa: SIM115 (open while ibsim runs)
        self.ibsim = subprocess.Popen(
            ["ibsim", "-s", "-n", str(self.dir / "fabric.net")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.scratch,
        )  # fmt: skip
        log.close()
        self.procs.append(self.ibsim)
        logfile = self.scratch / "ibsim.log"
        wait_for("ibsim", lambda: "Network simulator ready" in logfile.read_text(errors="replace"), 60, 0.1)
        # opensm buffers its log unless told: the bench reads it to know when the subnet is up.
        config = self.scratch / "opensm.conf"
        config.write_text("force_log_flush TRUE\n")
        once = self.tool("opensm", "-F", str(config), "-o", "-f", str(self.scratch / "opensm-once.log"), timeout=300)
        if once.returncode != 0:
            raise RuntimeError(f"opensm -o failed: {once.stderr[-500:]}")
        osm_log = self.scratch / "opensm.log"
        self.opensm = subprocess.Popen(
            ["ibsim-run", "opensm", "-F", str(config), "-f", str(osm_log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
            cwd=self.scratch,
        )  # fmt: skip
        self.procs.append(self.opensm)
        wait_for("opensm", lambda: osm_log.exists() and "SUBNET UP" in osm_log.read_text(errors="replace"), 120, 0.1)
        time.sleep(1.0)

    def tool(self, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ibsim-run", *cmd], env=self.env, capture_output=True, text=True, timeout=timeout, cwd=self.scratch
        )

    def timed_tool(self, *cmd: str, cpu: int | None = None) -> dict:
        """One run of a diagnostic tool: wall seconds, its CPU and peak RSS (wait4), ibsim's CPU.

        With `cpu`, the tool and ibsim both run on that one CPU for the while (see ONE_CPU)."""
        sim_before = cpu_s(self.ibsim.pid)
        err = open(self.scratch / "tool.err", "wb")  # noqa: SIM115
        if cpu is not None:
            os.sched_setaffinity(self.ibsim.pid, {cpu})
        try:
            start = time.perf_counter()
            proc = subprocess.Popen(
                ["ibsim-run", *cmd], env=self.env, stdout=subprocess.DEVNULL, stderr=err, cwd=self.scratch,
                preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
            )  # fmt: skip
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
        finally:
            if cpu is not None:
                os.sched_setaffinity(self.ibsim.pid, os.sched_getaffinity(0))
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.close()
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} exited {proc.returncode}: {(self.scratch / 'tool.err').read_text()[-500:]}"
            )
        return {
            "seconds": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "ibsim_cpu_s": cpu_s(self.ibsim.pid) - sim_before,
            "maxrss_kb": usage.ru_maxrss,
        }

    def stop(self) -> None:
        for proc in reversed(self.procs):  # opensm before ibsim
            stop(proc)


class Collector:
    """The fabric collector's sweeper in a child process under ibsim-run, sweeping when told."""

    def __init__(self, sim: Simulated, settle_gc: bool = False) -> None:
        self.sim = sim
        cmd = ["ibsim-run", sys.executable, __file__, "--sweeper", str(sim.scratch)]
        err = sim.scratch / f"collector{'-gc' if settle_gc else ''}.err"
        self.proc = subprocess.Popen(
            cmd + (["--settle-gc"] if settle_gc else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(err, "wb"),  # noqa: SIM115
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
        sim_before = cpu_s(self.sim.ibsim.pid)
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        reply = read_reply(self.proc)
        reply["ibsim_cpu_s"] = cpu_s(self.sim.ibsim.pid) - sim_before
        return reply

    def close(self) -> dict:
        try:
            return self.ask("quit")
        finally:
            stop(self.proc)


def sweeper_child(scratch: str, settle_gc: bool = False) -> int:
    """Under ibsim-run: one Sweeper on open_port(), a sweep per line on stdin, its figures on stdout.

    With `settle_gc`, the process's cyclic collector is set as the fabric agent sets its own
    (fabricweb/heap.py); without, Python's defaults: --gc-compare."""
    from collectors.mads.snapshot import to_dict
    from collectors.mads.sweep import Sweeper, open_port
    from fabricweb.nodeauth import COLLECTOR as ROLE
    from fabricweb.nodeauth import signed_kwargs

    try:
        sweeper = Sweeper(open_port(), COLLECTOR)
    except OSError as e:
        emit({"error": str(e)})
        return 1
    if settle_gc:
        from fabricweb import heap

        heap.settle()
    emit({"ready": True})
    texts: dict[str, str] = {}
    for line in sys.stdin:
        command = line.strip()
        # `full+cas`, `counters+cas`: every channel adapter's counters too, as if no host ran an agent (the most
        # central can name: FABRIC_CA_COUNTERS=agentless on a fabric of agentless hosts).
        mode, _, cas = command.partition("+")
        if mode == "quit":
            for name, text in texts.items() if settle_gc else ():
                Path(scratch, f"{name}.json").write_text(text)
            emit({"hwm_kb": proc_kb("VmHWM"), "rss_kb": proc_kb("VmRSS")})
            return 0
        cpu, start = time.process_time(), time.perf_counter()
        adapters = frozenset(n.guid for n in sweeper.nodes if not n.is_switch) if cas else frozenset()
        sweep = sweeper.sweep(mode, adapters=adapters)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        text = signed_kwargs("00" * 32, to_dict(sweep), ROLE)["snapshot"]  # the text as sent
        snapshot_s = time.perf_counter() - start
        texts[command] = text
        switches = [n for n in sweep.nodes if n.is_switch]
        ca_ports = sum(1 for n in sweep.nodes if not n.is_switch for p in n.ports.values() if p.counters)
        emit(
            {
                "mode": sweep.mode,
                "seconds": seconds,
                "cpu_s": cpu,
                "snapshot_s": snapshot_s,
                "queries": sweep.queries,
                "errors": len(sweep.errors),
                "first_error": f"{sweep.errors[0].path}: {sweep.errors[0].reason}" if sweep.errors else None,
                "nodes": len(sweep.nodes),
                "switches": len(switches),
                "switch_ports": sum(1 for n in switches for p in n.ports if p > 0),
                "ca_ports": ca_ports,
                "bytes": len(text.encode()),
            }
        )
    return 0


def measure_sweeps(sim: Simulated, runs: int, gc_compare: bool = False) -> dict:
    out = {"load_before": load(), **{key: [] for key in SERIES}}
    one_cpu = min(os.sched_getaffinity(0))
    collector = Collector(sim, settle_gc=True)  # as the fabric agent runs: its heap settled
    default_gc = None
    try:
        if gc_compare:
            default_gc = Collector(sim, settle_gc=False)
            default_gc.ask("full")
        out["first"] = collector.ask("full")  # discovery from nothing, as at the collector's start
        sim.timed_tool("ibnetdiscover")  # the tools' first runs too, untimed
        sim.timed_tool("ibqueryerrors", "--data")

        procs = (sim.ibsim, sim.opensm, collector.proc, default_gc.proc if default_gc else None)
        pids = lambda: [p.pid for p in procs if p is not None]  # noqa: E731

        def timed(key: str, step) -> None:
            with Others(pids) as others:
                result = step()
            out[key].append(result | {"others": others.cpus})

        def ours() -> None:
            timed("full", lambda: collector.ask("full"))
            timed("counters", lambda: collector.ask("counters"))

        def theirs() -> None:
            timed("ibnetdiscover", lambda: sim.timed_tool("ibnetdiscover"))
            timed("ibqueryerrors", lambda: sim.timed_tool("ibqueryerrors", "--data"))

        def theirs_one_cpu() -> None:
            timed("ibnetdiscover@1", lambda: sim.timed_tool("ibnetdiscover", cpu=one_cpu))
            timed("ibqueryerrors@1", lambda: sim.timed_tool("ibqueryerrors", "--data", cpu=one_cpu))

        def ours_with_cas() -> None:  # every channel adapter's counters too
            timed("full+cas", lambda: collector.ask("full+cas"))
            timed("counters+cas", lambda: collector.ask("counters+cas"))

        def ours_default_gc() -> None:
            timed("full+defaultgc", lambda: default_gc.ask("full"))
            timed("counters+defaultgc", lambda: default_gc.ask("counters"))

        for run in range(runs):
            steps = (ours, ours_with_cas, theirs, theirs_one_cpu) + ((ours_default_gc,) if default_gc else ())
            for step in steps if run % 2 == 0 else steps[::-1]:
                step()
    finally:
        if default_gc is not None:
            default_gc.close()
        out["collector"] = collector.close()
    out["load_after"] = load()
    return out


# -- sizes in Redis ------------------------------------------------------------------------------
def redis_sizes(scratch: Path, host_texts: list[str]) -> dict | str:
    """Bytes of one message as Redis holds it: a full sweep, a counters-only poll, a host snapshot (signed)."""
    if not shutil.which("redis-server"):
        return "redis-server not installed"
    import redis

    from collectors import wire
    from fabricweb.fabricagent.app import create_app
    from fabricweb.fabricagent.config import FabricAgentConfig
    from fabricweb.names import INGEST_SNAPSHOT, SWEEP_QUEUE, snapshot_queue
    from fabricweb.nodeauth import signed_kwargs

    with running_redis() as server:
        client = redis.Redis(port=server.port)
        config = FabricAgentConfig(broker_url=server.url, collector=COLLECTOR, key="00" * 32)
        app, agent = create_app(config, port_factory=lambda *a: None)
        queue = SWEEP_QUEUE
        out = {}
        for mode in ("full", "counters"):
            agent.deliver(json.loads((scratch / f"{mode}.json").read_text()))
            out[mode] = len(client.lindex(queue, 0))
            client.delete(queue)
        # As the node agent's Agent.deliver sends a signed snapshot: its wire form, full (an agent's first poll, and
        # one every wire.FULL_EVERY) and between (each device's attributes as last sent), and beside them (the
        # peer) the snapshot with named counters agents sent before it.
        between = wire.Encoder()

        def after_first(snap: dict) -> dict:
            between.encode(snap)
            return between.encode(snap)

        for form, encode in (("host", wire.encode), ("host_between", after_first), ("host_named", lambda snap: snap)):
            sizes = []
            for text in host_texts[:20]:
                snap = json.loads(text)
                signed = signed_kwargs("00" * 32, encode(snap))
                q = snapshot_queue(snap["host"])
                app.send_task(
                    INGEST_SNAPSHOT,
                    kwargs=signed,
                    queue=q,
                    argsrepr="()",
                    kwargsrepr=f"{{signed snapshot of {snap['host']}}}",
                )
                sizes.append(len(client.lindex(q, 0)))
                client.delete(q)
            out[form] = statistics.mean(sizes)
        app.close()
        return out


# -- host snapshots ------------------------------------------------------------------------------
def host_polls(sim: Simulated) -> list[list[dict]]:
    """Two polls of the fabric's hosts, one simulated step apart (simulate --once made the first step)."""
    from collectors.sim import Fabric

    return two_polls(Fabric.load(str(sim.dir)), sim.dir, sim.hosts)


def gpu_host_polls(scratch: Path, hosts: int) -> list[list[dict]]:
    """Two polls of `hosts` hosts of EIGHT_HCAS one-port HCAs each, the 100,000-port fabric's host shape
    (bench_scale.py), simulated apart from the ibsim fabric: InfiniBand hosts only (simulate makes some RoCE)."""
    from collectors.sim import Fabric

    out = scratch / "sim8"
    # A fifth more than asked for: the RoCE hosts among them (about one in twenty) are left out below.
    fabric = Fabric.open(str(out), hosts + hosts // 5 + 2, 1, seed=8, hcas=EIGHT_HCAS, fresh=True)
    fabric.step(STEP.total_seconds())
    names = sorted(p.name for p in out.iterdir() if p.name.startswith("cn"))
    polls = two_polls(fabric, out, names)
    infiniband = [
        i
        for i, snap in enumerate(polls[0])
        if all(p["link_layer"] == "InfiniBand" for d in snap["devices"] for p in d["ports"])
    ][:hosts]
    if len(infiniband) < hosts:
        raise RuntimeError(f"the simulation made {len(infiniband)} InfiniBand hosts of {EIGHT_HCAS} HCAs, not {hosts}")
    # Named apart from the ibsim fabric's hosts (both simulations name theirs cn...).
    return [[{**poll[i], "host": GPU_PREFIX + poll[i]["host"]} for i in infiniband] for poll in polls]


def two_polls(fabric, tree: Path, hosts: list[str]) -> list[list[dict]]:
    """`hosts`' snapshots read from `tree` twice, `fabric` stepped once between."""
    from collectors import read_host, to_dict

    polls = []
    for k in range(2):
        if k:
            fabric.step(STEP.total_seconds())
        when = (T0 + timedelta(seconds=fabric.clock)).timestamp()
        polls.append([to_dict(read_host(str(tree / h), host=h, use_verbs=False, now=when)) for h in hosts])
    return polls


# -- ingest (child process, PostgreSQL) ------------------------------------------------------------
def database_name(scratch: Path) -> str:
    """The throwaway database's name, from the scratch directory's (the parent drops it too if the child dies)."""
    return "fabric_" + re.sub(r"[^a-z0-9]", "_", scratch.name.lower())


def setup_django(base_url: str, name: str) -> str:
    import psycopg
    from django.core.management.utils import get_random_secret_key

    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    os.environ["SECRET_KEY"] = get_random_secret_key()
    os.environ["DJANGO_SETTINGS_MODULE"] = "fabricweb.settings"
    os.environ["DATABASE_URL"] = base_url.rsplit("/", 1)[0] + "/" + name
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return f"PostgreSQL {version} (fsync={fsync})"


def drop_database(base_url: str, name: str) -> None:
    import psycopg

    if "django" in sys.modules:
        from django.conf import settings

        if settings.configured:
            from django.db import connections

            connections.close_all()
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")


class Hosts:
    """Host poll k: the first real poll with every counter moved k times as much as from the first to the second,
    its hw_counters as an agent reads them, every `hw_every` polls (FABRIC_HW_COUNTERS_EVERY, docs/agent.md): moved
    at those polls only, so that between them the agents send them as last sent (collectors/wire.py)."""

    def __init__(self, polls: list[list[dict]], hw_every: int) -> None:
        from bench_ingest import _steps

        self.first, self.hw_every = polls[0], hw_every
        self.steps, self.hw_steps = [], []
        for a, b in zip(polls[0], polls[1], strict=True):
            steps = _steps(a, b)
            self.steps.append({key: moves for key, moves in steps.items() if key[2] != "hw_counters"})
            self.hw_steps.append({key: moves for key, moves in steps.items() if key[2] == "hw_counters"})

    def poll(self, k: int, when: datetime) -> list[dict]:
        from bench_ingest import advanced

        read_at = k // self.hw_every * self.hw_every  # the last poll that read the hw_counters
        return [
            advanced(advanced(snap, hw, read_at, iso(when)), steps, k, iso(when))
            for snap, steps, hw in zip(self.first, self.steps, self.hw_steps, strict=True)
        ]


class Sweeps:
    """Sweep k of the fabric: the full sweep's snapshot, dated, its cabled switch ports' traffic moved k steps.

    A counters-only sweep is the same with no port rows and the counters poll's own `sweep` figures,
    as Sweeper.sweep("counters") makes it: the same nodes, new counters.
    """

    def __init__(self, full_text: str, counters_text: str) -> None:
        self.full = json.loads(full_text)
        self.counters_sweep = json.loads(counters_text)["sweep"]
        cols = {name: i for i, name in enumerate(self.full["ports"]["columns"])}
        cabled = {
            (r[cols["node"]], r[cols["port"]])
            for r in self.full["ports"]["rows"]
            if r[cols["phys_state"]] == LINK_UP and r[cols["peer_node"]] is not None
        }
        ccols = {name: i for i, name in enumerate(self.full["counters"]["columns"])}
        rng = random.Random(22)
        self.moves = []  # (row index, column, step)
        for index, row in enumerate(self.full["counters"]["rows"]):
            if (row[0], row[1]) not in cabled:
                continue
            data = rng.randrange(4 * 10**9)
            packets = data // 2048 + 1
            steps = dict.fromkeys(MOVING, packets)
            steps.update(port_xmit_data_64=data, port_rcv_data_64=rng.randrange(4 * 10**9),
                         multicast_xmit_packets=rng.randrange(1000), multicast_rcv_packets=rng.randrange(1000),
                         port_xmit_wait=rng.randrange(10**5))  # fmt: skip
            for name, step in steps.items():
                if row[ccols[name]] is not None:
                    self.moves.append((index, ccols[name], step))
        self.cabled = len(cabled)

    def sweep(self, k: int, when: datetime, mode: str) -> dict:
        rows = [list(r) for r in self.full["counters"]["rows"]]
        for index, column, step in self.moves:
            rows[index][column] += k * step
        snap = {**self.full, "collected_at": iso(when), "counters": {**self.full["counters"], "rows": rows}}
        if mode == "counters":
            snap.update(mode="counters", sweep=self.counters_sweep, ports={**self.full["ports"], "rows": []})
        return snap


def ingest_child(args: argparse.Namespace) -> int:
    scratch = Path(args.ingest)
    name = database_name(scratch)
    label = setup_django(args.db, name)
    try:
        emit(_ingest(scratch, args) | {"db": label})
    finally:
        drop_database(args.db, name)
    return 0


def _ingest(scratch: Path, args: argparse.Namespace) -> dict:
    from django.db import connection

    from collectors import wire
    from fabricweb import heap
    from fabricweb.fabric.ingest import ingest_fabric
    from fabricweb.fabric.schema import parse_fabric
    from fabricweb.health.models import LinkPolicy
    from fabricweb.telemetry.ingest import ingest_batch
    from fabricweb.telemetry.intake.jsonread import json_text_loads
    from fabricweb.telemetry.validation.quickwire import parse_wire
    from fabricweb.telemetry.validation.schema import parse_snapshot

    heap.settle()  # as `manage.py ingest` does
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]  # its CPU is this ingest's, not other work's
    others = []
    texts = {m: (scratch / f"{m}.json").read_text() for m in ("full", "counters")}
    # Per host shape (HOST_SHAPES): its two polls. As an agent sends a poll after its first: the wire form
    # (collectors/wire.py), each device's attributes as last sent (its Encoder sent them at the poll before). Read as
    # the consumer reads a signed snapshot's text (jsonread) and types it (the wire's quick path, quickwire.py).
    polls = {kind: json.loads((scratch / f"{kind}s.json").read_text()) for kind in HOST_SHAPES}
    host_texts = {}
    for kind, two in polls.items():
        encoder = wire.Encoder()
        for snap in two[0]:
            encoder.encode(snap)
        host_texts[kind] = [json.dumps(encoder.encode(s), separators=(",", ":"), allow_nan=False) for s in two[1]]
    long_way = {"reading": 0, "storing": 0}  # snapshots the quick path left to ingest's worded checks

    def typed(data: dict, now: datetime, step: str):
        snap = parse_wire(data, now)
        if snap is None:
            long_way[step] += 1
            return parse_snapshot(wire.decode(data), now)
        return snap

    out: dict = {"hwm_start_kb": proc_kb("VmHWM")}

    # (a) reading: decode + validate, per port, alternately.
    fabric_now = {m: datetime.fromisoformat(json.loads(t)["collected_at"]) + PROMPT for m, t in texts.items()}
    host_now = {kind: datetime.fromisoformat(two[1][0]["collected_at"]) + PROMPT for kind, two in polls.items()}
    for kind, two in polls.items():  # the worded checks learn each name once, as a consumer's first polls teach them
        for snap in two[0]:
            parse_snapshot(wire.decode(wire.encode(snap)), host_now[kind])
    parse_fabric(json_text_loads(texts["full"]), fabric_now["full"])
    reading = {k: [] for k in (*HOST_SHAPES, "full", "counters")}

    def read_hosts(kind: str) -> None:
        decode = validate = 0.0
        ports = 0
        for text in host_texts[kind]:
            t0 = time.perf_counter()
            data = json_text_loads(text)
            t1 = time.perf_counter()
            snap = typed(data, host_now[kind], "reading")
            validate += time.perf_counter() - t1
            decode += t1 - t0
            ports += sum(len(d.ports) for d in snap.devices)
        reading[kind].append((decode / ports * 1e6, validate / ports * 1e6))

    def read_fabric(mode: str) -> None:
        t0 = time.perf_counter()
        data = json_text_loads(texts[mode])
        t1 = time.perf_counter()
        fabric = parse_fabric(data, fabric_now[mode])
        t2 = time.perf_counter()
        ports = len(fabric.counters)  # (node, port) -> values: one per switch port counted
        reading[mode].append(((t1 - t0) / ports * 1e6, (t2 - t1) / ports * 1e6))
        out[f"read_{mode}_ports"] = ports

    for run in range(args.runs):
        steps = [*(partial(read_hosts, kind) for kind in HOST_SHAPES), partial(read_fabric, "full"),
                 partial(read_fabric, "counters")]  # fmt: skip
        for step in steps if run % 2 == 0 else steps[::-1]:
            with Others(lambda: [backend]) as busy:
                step()
            others.append(busy.cpus)
    out["reading"] = reading
    out["host_ports_per_poll"] = {kind: sum(len(d["ports"]) for s in two[1] for d in s["devices"]) for kind, two in
                                  polls.items()}  # fmt: skip
    out["hosts_per_poll"] = {kind: len(two[1]) for kind, two in polls.items()}

    # (b) storing, in steady state. The 8-HCA hosts' ports run 4X HDR, as a site's link policy says of its GPU nodes:
    # without it (--gpu-hosts-unruled) they stand below the 12X the ibsim hosts of their model train at, and each port
    # holds a width-downgrade event and each HCA a PCIe one.
    if not args.gpu_hosts_unruled:
        LinkPolicy.objects.create(name="GPU nodes", node_glob=f"{GPU_PREFIX}*", speed="HDR", lanes=4)
    hosts = {kind: Hosts(two, args.hw_every) for kind, two in polls.items()}
    sweeps = Sweeps(texts["full"], texts["counters"])
    out["cabled_switch_ports"] = sweeps.cabled
    clock = dict.fromkeys((*HOST_SHAPES, "fabric"), 0)
    storing = {k: [] for k in (*HOST_SHAPES, "full", "counters")}
    hwm = {k: [] for k in (*HOST_SHAPES, "full", "counters")}
    grew = {k: [] for k in (*HOST_SHAPES, "full", "counters")}  # peak RSS during the step over RSS before it
    # The hosts' agents': a device's attributes sent when they change (or every FULL_EVERY).
    senders = {kind: wire.Encoder() for kind in HOST_SHAPES}

    def store_hosts(kind: str, timed: bool) -> tuple[float, int]:
        k = clock[kind]
        clock[kind] += 1
        when = T0 + k * STEP
        # Typed as the consumer types them before a batch (reading, above): storing is ingest_batch's alone.
        snaps = [typed(senders[kind].encode(snap), when + PROMPT, "storing") for snap in hosts[kind].poll(k, when)]
        reset_hwm()
        rss = proc_kb("VmRSS")
        start, samples = time.perf_counter(), 0
        for i in range(0, len(snaps), HOST_BATCH):
            result = ingest_batch(snaps[i : i + HOST_BATCH], now=when + PROMPT)
            if result.rejected:
                raise RuntimeError(f"host snapshot rejected: {result.rejected[0].error}")
            samples += result.samples_written
        seconds = time.perf_counter() - start
        if timed:
            storing[kind].append(seconds / samples * 1e6)
            hwm[kind].append(proc_kb("VmHWM"))
            grew[kind].append(proc_kb("VmHWM") - rss)
        return seconds, samples

    def store_fabric(mode: str, timed: bool) -> tuple[float, object]:
        k = clock["fabric"]
        clock["fabric"] += 1
        when = T0 + k * STEP + STEP / 2
        snap = sweeps.sweep(k, when, mode)
        reset_hwm()
        rss = proc_kb("VmRSS")
        start = time.perf_counter()
        result = ingest_fabric(snap, now=when + PROMPT)
        seconds = time.perf_counter() - start
        if result.status != "stored":
            raise RuntimeError(f"sweep {k} not stored: {result.status} {result.note}")
        if timed:
            storing[mode].append(seconds / result.ports * 1e6)
            hwm[mode].append(proc_kb("VmHWM"))
            grew[mode].append(proc_kb("VmHWM") - rss)
            out[f"store_{mode}_ports"] = result.ports
            out[f"store_{mode}_samples"] = result.samples_written
        return seconds, result

    for kind in HOST_SHAPES:
        seconds, samples = store_hosts(kind, False)
        out[f"first_{kind}_us"] = seconds / samples * 1e6
    seconds, result = store_fabric("full", False)
    out["first_full_us"] = seconds / result.ports * 1e6
    out["first_full_s"] = seconds
    for _ in range(args.warm):
        for kind in HOST_SHAPES:
            store_hosts(kind, False)
        store_fabric("full", False)
    for run in range(args.runs):
        # Each host shape's poll beside each sweep, the order flipped every other run.
        host_steps = [partial(store_hosts, kind, True) for kind in HOST_SHAPES]
        steps = [*host_steps, partial(store_fabric, "full", True), *host_steps, partial(store_fabric, "counters", True)]
        for step in steps if run % 2 == 0 else steps[::-1]:
            with Others(lambda: [backend]) as busy:
                step()
            others.append(busy.cpus)
    out["others"] = others
    out["long_way"] = long_way
    out["storing"] = storing
    out["hwm_kb"] = hwm
    out["grew_kb"] = grew
    out["rss_end_kb"] = proc_kb("VmRSS")
    return out


def measure_ingest(scratch: Path, args: argparse.Namespace, code: Path = REPO) -> dict:
    """Step 5 in a child process, with the fabricweb and collectors of the checkout at `code`."""
    before = load()
    env = {**os.environ, CODE_ENV: str(code)} if code != REPO else None
    done = subprocess.run(
        [sys.executable, __file__, "--ingest", str(scratch), "--runs", str(args.runs), "--warm", str(args.warm),
         "--db", args.db, "--hw-every", str(args.hw_every),
         *(["--gpu-hosts-unruled"] if args.gpu_hosts_unruled else [])],
        capture_output=True, text=True, cwd=code, env=env, check=False,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith(PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"ingest child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len(PREFIX) :]) | {"load_before": before, "load_after": load()}


# -- report --------------------------------------------------------------------------------------
def report_against(ours: list[dict], theirs: list[dict], peer: Path) -> None:
    """Step 5's figures of this tree beside --against's, child by child (alternated), with the ratio of the medians
    of all their runs."""

    def figures(children: list[dict], step: str, kind: str) -> list[float]:
        return [sum(x) if step == "reading" else x for c in children for x in c[step][kind]]

    print(f"\ningest, this tree against {peer} ({len(ours)} child(ren) of each, alternated), µs per port:")
    kinds = {
        "host": "a one-port host's port",
        "host8": f"a port of a host of {EIGHT_HCAS} HCAs",
        "full": "a switch port, full sweep",
        "counters": "a switch port, counters-only",
    }
    for step in ("reading", "storing"):
        for kind, what in kinds.items():
            mine, peers = figures(ours, step, kind), figures(theirs, step, kind)
            ratio, label = statistics.median(mine) / statistics.median(peers), f"{step} {what}"
            print(f"  {label:<50}{spread(mine, '{:.1f}'):<24} against {spread(peers, '{:.1f}'):<24} ratio {ratio:.2f}x")


def per_port(sweeps: dict) -> None:
    """What a channel adapter's counters cost per port, against a switch port's: a switch port's is its
    counters-only poll over its ports (wall and CPU seconds, MADs, bytes as sent); a CA port's, what reading every
    CA's counters too added to the same run's poll (or full sweep), over the CA ports read."""
    switch = sweeps["counters"][0]["switch_ports"]
    cas = sweeps["counters+cas"][0]["ca_ports"]
    if not cas:
        print("  CA counters: no CA port answered")
        return

    def each(values: list[float], ports: int) -> float:
        return statistics.median(values) / ports * 1e6

    rows = []
    for key in ("seconds", "cpu_s", "queries", "bytes"):
        plain = [v[key] for v in sweeps["counters"]]
        extra = {
            base: [c[key] - b[key] for b, c in zip(sweeps[base], sweeps[base + "+cas"], strict=True)]
            for base in ("counters", "full")
        }
        scale = 1e-6 if key in ("queries", "bytes") else 1.0  # counts and bytes per port, not per million
        rows.append((key, each(plain, switch) * scale, each(extra["counters"], cas) * scale,
                     each(extra["full"], cas) * scale))  # fmt: skip
    print(f"  per port, {switch:,} switch ports against {cas:,} CA ports (medians):")
    units = {"seconds": "µs wall", "cpu_s": "µs CPU", "queries": "MADs", "bytes": "bytes sent"}
    for key, a, b, c in rows:
        verdict = "met" if max(b, c) <= a * 1.05 else "MISSED"  # 5%: the medians' noise on a loaded machine
        print(
            f"    {units[key]:<11} a switch port {a:8.2f}   a CA port: {b:8.2f} (added to a counters-only poll), "
            f"{c:8.2f} (to a full sweep)   CA <= switch: {verdict}"
        )


def report(sim: Simulated, sweeps: dict | None, sizes: dict | str | None, ingest: dict | None, args) -> None:
    print(f"machine: {machine()}")
    print(
        f"fabric: {sim.switches} switches ({args.leaves} leaves, {args.spines} spines) x {args.switch_ports} ports, "
        f"{sim.cas} hosts; {sim.switch_ports + sim.cas:,} ports ({sim.switch_ports:,} switch ports); "
        f"written by `{' '.join(sim.command)}`"
    )
    if sweeps:
        first = sweeps["first"]
        print(
            f"\nsweeps, {args.runs} runs alternated with the tools (min / median / max; load {sweeps['load_before']}"
            f" before, {sweeps['load_after']} after):"
        )
        rows = [
            ("full sweep (ours)", sweeps["full"], GOAL_FULL_S),
            ("counters-only poll (ours)", sweeps["counters"], GOAL_COUNTERS_S),
            ("ibnetdiscover", sweeps["ibnetdiscover"], None),
            ("ibqueryerrors --data", sweeps["ibqueryerrors"], None),
            ("ibnetdiscover, 1 CPU", sweeps["ibnetdiscover@1"], None),
            ("ibqueryerrors --data, 1 CPU", sweeps["ibqueryerrors@1"], None),
        ]
        rows.insert(2, ("full, every CA's counters too", sweeps["full+cas"], GOAL_FULL_S))
        rows.insert(3, ("counters, every CA's too", sweeps["counters+cas"], GOAL_COUNTERS_S))
        if sweeps["full+defaultgc"]:
            rows.insert(2, ("full, Python's default GC", sweeps["full+defaultgc"], GOAL_FULL_S))
            rows.insert(3, ("counters, default GC", sweeps["counters+defaultgc"], GOAL_COUNTERS_S))
        print(f"  {'':<28}{'seconds':<26}{'its CPU s':<22}{'ibsim CPU s':<22}{'other work, CPUs':<22}goal")
        for label, values, goal in rows:
            secs = [v["seconds"] for v in values]
            verdict = ""
            if goal is not None:
                verdict = f"<= {goal:g} s: " + ("met" if statistics.median(secs) <= goal else "MISSED")
                verdict += f" ({sum(s <= goal for s in secs)}/{len(secs)} runs within)"
            print(
                f"  {label:<28}{spread(secs):<26}{spread([v['cpu_s'] for v in values]):<22}"
                f"{spread([v['ibsim_cpu_s'] for v in values]):<22}{spread([v['others'] for v in values], '{:.2f}'):<22}"
                f"{verdict}"
            )
        for suffix, how in (("", "as scheduled"), ("@1", "ibsim and the tool on 1 CPU")):
            n, q = sweeps["ibnetdiscover" + suffix], sweeps["ibqueryerrors" + suffix]
            ratio = [f["seconds"] / (a["seconds"] + b["seconds"]) for f, a, b in zip(sweeps["full"], n, q, strict=True)]
            ratio_c = [c["seconds"] / b["seconds"] for c, b in zip(sweeps["counters"], q, strict=True)]
            verdict = "met" if statistics.median(ratio) <= GOAL_RATIO else "MISSED"
            print(
                f"  full / (ibnetdiscover + ibqueryerrors), {how}, same run: {spread(ratio, '{:.2f}x')}"
                f"   goal <= {GOAL_RATIO}x: {verdict}; counters-only / ibqueryerrors: {spread(ratio_c, '{:.2f}x')}"
            )
            if sweeps["full+defaultgc"]:
                ratio = [
                    f["seconds"] / (a["seconds"] + b["seconds"])
                    for f, a, b in zip(sweeps["full+defaultgc"], n, q, strict=True)
                ]
                verdict = "met" if statistics.median(ratio) <= GOAL_RATIO else "MISSED"
                print(f"    with Python's default GC: {spread(ratio, '{:.2f}x')}   goal <= {GOAL_RATIO}x: {verdict}")
        full = sweeps["full"][0]
        print(
            f"  MADs: full {full['queries']:,}, counters {sweeps['counters'][0]['queries']:,}; errors in any sweep: "
            f"{max(v['errors'] for v in sweeps['full'] + sweeps['counters'])}; first full sweep (discovery from "
            f"nothing, untimed above) {first['seconds']:.3f} s; snapshot built and JSON-encoded in "
            f"{spread([v['snapshot_s'] for v in sweeps['full']])} s (full), "
            f"{spread([v['snapshot_s'] for v in sweeps['counters']])} s (counters)"
        )
        per_port(sweeps)
        tools = {
            k: max(v["maxrss_kb"] for v in sweeps[k] + sweeps[k + "@1"]) for k in ("ibnetdiscover", "ibqueryerrors")
        }
        print(
            f"  peak RSS: the collector {sweeps['collector']['hwm_kb'] / 1024:.0f} MB (VmHWM, its whole run), "
            f"ibnetdiscover {tools['ibnetdiscover'] / 1024:.0f} MB, "
            f"ibqueryerrors {tools['ibqueryerrors'] / 1024:.0f} MB (ru_maxrss)"
        )
        print(
            f"  {full['switches']} switches and {full['switch_ports']:,} switch ports seen by every sweep: "
            + (
                "yes"
                if all(v["switch_ports"] == sim.switch_ports for v in sweeps["full"] + sweeps["counters"])
                else "NO"
            )
        )
        if any(v["errors"] for v in sweeps["full"] + sweeps["counters"]):
            print(
                f"  first error: {next(v['first_error'] for v in sweeps['full'] + sweeps['counters'] if v['errors'])}"
            )
        ports_rows = sim.switch_ports + sim.switches + sim.cas  # each switch's port 0 has a row too
        print("\nsnapshot size (the JSON text as signed and sent):")
        for mode in ("full", "counters"):
            b = sweeps[mode][-1]["bytes"]
            line = f"  {mode:<9}{b:>11,} B = {b / sim.switch_ports:.0f} B per switch port"
            if mode == "full":
                line += f" ({b / ports_rows:.0f} B per port row of {ports_rows:,})"
            if isinstance(sizes, dict):
                line += f"; in Redis, signed, with the message envelope: {sizes[mode]:,} B = "
                line += f"{sizes[mode] / sim.switch_ports:.0f} B per switch port"
            print(line)
        if isinstance(sizes, dict):
            print(
                f"  a host snapshot (one port) in Redis, signed: {sizes['host']:,.0f} B per port in its wire form"
                f" ({sizes['host_between']:,.0f} B between full polls, its device's attributes as last sent),"
                f" {sizes['host_named']:,.0f} B with named counters"
                f" (before it; {sizes['host_named'] / sizes['host']:.2f}x)"
            )
        elif sizes:
            print(f"  in Redis: not measured ({sizes})")
    if ingest:
        hp, hn = ingest["host_ports_per_poll"], ingest["hosts_per_poll"]
        print(
            f"\ningest, {ingest['db']}, µs per port (min / median / max over {args.runs} runs, alternated; "
            f"load {ingest['load_before']} before, {ingest['load_after']} after):"
        )
        r = ingest["reading"]
        shapes = {
            "host": f"host port ({hp['host']} hosts of 1 port, wire form)",
            "host8": f"host port ({hn['host8']} hosts of {EIGHT_HCAS} HCAs, {hp['host8']} ports)",
        }
        print(f"  {'(a) reading, as the consumer reads':<50}{'decode':<24}{'validate':<24}both")
        for label, key in (
            *((label, kind) for kind, label in shapes.items()),
            (f"switch port, full sweep ({ingest['read_full_ports']:,})", "full"),
            (f"switch port, counters-only ({ingest['read_counters_ports']:,})", "counters"),
        ):
            d, v, both = [x[0] for x in r[key]], [x[1] for x in r[key]], [a + b for a, b in r[key]]
            print(f"  {label:<50}{spread(d, '{:.1f}'):<24}{spread(v, '{:.1f}'):<24}{spread(both, '{:.1f}')}")
        s = ingest["storing"]
        long_way = ingest["long_way"]
        if any(long_way.values()):
            print(f"  host snapshots the wire's quick path left to the worded checks: {long_way}")
        print(f"  (b) storing, after the first round and {args.warm} more untimed:")
        for kind, label in shapes.items():
            print(f"  {label.replace('host port', 'host port-sample', 1):<50}{spread(s[kind], '{:.1f}')}")
        print(
            f"  {'switch port, full sweep (ingest_fabric)':<50}{spread(s['full'], '{:.1f}'):<24}"
            f"({ingest['store_full_ports']:,} ports, {ingest['store_full_samples']:,} samples a sweep)"
        )
        print(f"  {'switch port, counters-only (ingest_fabric)':<50}{spread(s['counters'], '{:.1f}')}")
        fs, cs = statistics.median(s["full"]), statistics.median(s["counters"])
        fr = statistics.median(a + b for a, b in r["full"])
        cr = statistics.median(a + b for a, b in r["counters"])
        for kind, what in (("host", "a one-port host's port"), ("host8", f"a port of a host of {EIGHT_HCAS} HCAs")):
            hs, hr = statistics.median(s[kind]), statistics.median(a + b for a, b in r[kind])
            print(
                f"  {what} against a switch port (medians): reading {hr / fr:.2f}x a full sweep's, {hr / cr:.2f}x a "
                f"counters-only one's; storing {hs / fs:.2f}x and {hs / cs:.2f}x"
            )
        print(
            "  first round (creates everything): "
            + ", ".join(f"{kind} {ingest[f'first_{kind}_us']:.0f} µs per port-sample" for kind in shapes)
            + f", full sweep {ingest['first_full_us']:.0f} µs per switch port ({ingest['first_full_s']:.1f} s)"
        )
        print(
            f"  other work on the machine during these steps: {spread(ingest['others'], '{:.2f}')} CPUs "
            f"of {os.cpu_count()} (the database's backend counted as the bench's)"
        )
        h, g = ingest["hwm_kb"], ingest["grew_kb"]
        print(
            f"  peak RSS of the ingest process: {max(max(v) for v in h.values()) / 1024:.0f} MB "
            f"({ingest['hwm_start_kb'] / 1024:.0f} MB after migrate); above the RSS before the step (VmHWM reset "
            f"before each): a host poll {max(g['host']) / 1024:.1f} MB ({max(g['host8']) / 1024:.1f} MB of the "
            f"{EIGHT_HCAS}-HCA hosts), a full sweep {max(g['full']) / 1024:.1f} MB, "
            f"a counters-only sweep {max(g['counters']) / 1024:.1f} MB"
        )
        print(f"  ({ingest['cabled_switch_ports']:,} cabled switch ports' traffic counters moved each sweep)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", type=int, default=10, help="untimed ingest rounds after the first")
    parser.add_argument("--db", default=os.environ.get("TEST_POSTGRES_URL"), help="PostgreSQL URL (TEST_POSTGRES_URL)")
    parser.add_argument("--nodes", type=int, default=471, help="simulated nodes (5%% are RoCE, off the fabric)")
    parser.add_argument("--leaves", type=int, default=170)
    parser.add_argument("--spines", type=int, default=86)
    parser.add_argument("--switch-ports", type=int, default=40)
    parser.add_argument(
        "--gpu-hosts", type=int, default=56, help=f"hosts of {EIGHT_HCAS} one-port HCAs measured in ingest too"
    )
    parser.add_argument(
        "--hw-every", type=int, default=6, help="polls between the hosts' hw_counters reads (the agents' default: 6)"
    )
    parser.add_argument(
        "--gpu-hosts-unruled",
        action="store_true",
        help=f"no link policy for the {EIGHT_HCAS}-HCA hosts: each of their ports then holds a width-downgrade event",
    )
    parser.add_argument("--no-ingest", action="store_true", help="only the sweeps and the sizes")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, snapshots)")
    parser.add_argument(
        "--gc-compare",
        action="store_true",
        help="also sweep from a second collector process with Python's default GC settings, alternately",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of another tree (a git worktree): step 5 (ingest) run with its code too, alternated",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --against: ingest children of each tree")
    parser.add_argument("--sweeper", help=argparse.SUPPRESS)
    parser.add_argument("--settle-gc", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ingest", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweeper:
        return sweeper_child(args.sweeper, args.settle_gc)
    if args.ingest:
        return ingest_child(args)

    missing = [t for t in ("ibsim", "ibsim-run", "opensm", "ibnetdiscover", "ibqueryerrors") if not shutil.which(t)]
    if missing:
        sys.exit(f"needs ibsim-utils, opensm and infiniband-diags: {', '.join(missing)} not found")
    if not args.no_ingest and not args.db:
        sys.exit("no PostgreSQL: set TEST_POSTGRES_URL (source /tmp/testenv.sh) or pass --db, or --no-ingest")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops ibsim and opensm
    scratch = Path(tempfile.mkdtemp(prefix="bench-fabric-"))
    sim = Simulated(scratch, args)
    sweeps = sizes = ingest = None
    try:
        started = time.monotonic()
        sim.write()
        sim.start()
        print(f"fabric written and swept by opensm in {time.monotonic() - started:.0f} s; load {load()}", flush=True)
        sweeps = measure_sweeps(sim, args.runs, args.gc_compare)
        sim.stop()
        polls = host_polls(sim)
        (scratch / "hosts.json").write_text(json.dumps(polls))
        (scratch / "host8s.json").write_text(json.dumps(gpu_host_polls(scratch, args.gpu_hosts)))
        host_texts = [json.dumps(s, separators=(",", ":")) for s in polls[1]]
        try:
            sizes = redis_sizes(scratch, host_texts)
        except Exception as e:  # sizes in Redis are a side figure
            sizes = f"{type(e).__name__}: {e}"
        peer: list[dict] = []
        if not args.no_ingest:
            ours: list[dict] = []
            for r in range(args.rounds if args.against else 1):
                sides = [(ours, REPO), (peer, args.against)] if args.against else [(ours, REPO)]
                for results, code in sides if r % 2 == 0 else sides[::-1]:
                    results.append(measure_ingest(scratch, args, code))
            ingest = ours[0] | {"rounds": ours}
        report(sim, sweeps, sizes, ingest, args)
        if peer:
            report_against(ingest["rounds"], peer, args.against)
        print(f"\n(in {time.monotonic() - started:.0f} s)")
    finally:
        sim.stop()
        if not args.no_ingest and args.db:
            try:
                drop_database(args.db, database_name(scratch))  # if the ingest child died before dropping it
            except Exception as e:
                print(f"could not drop {database_name(scratch)}: {e}", file=sys.stderr)
        if args.keep:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
