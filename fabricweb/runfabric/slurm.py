"""A private Slurm beside the simulated fabric (`runfabric --slurm`): the demo's scheduler.

munged on a key of this run, slurmctld, and one slurmd per simulated host, all on 127.0.0.1 and all
children of runfabric (stopped with it), every client and daemon reading the slurm.conf written here
through SLURM_CONF. One-CPU nodes in one partition, `all`, so a node runs one job at a time. Slurm's
daemons run as root here (SlurmUser=root), as the recipe for one machine does; a site's Slurm is its
own, and `runfabric --slurm-conf FILE` reads that one instead (docs/jobs.md).

The tests' Slurm (tests/slurm_support.py) writes its configuration with `slurm_conf` too.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .children import Children, Stopped, say

TOOLS = ("slurmctld", "slurmd", "squeue", "sbatch", "scontrol", "sinfo", "scancel", "munged")
START_TIMEOUT_S = 60.0


class SlurmFailed(RuntimeError):
    """The private Slurm did not come up: said in one line, and the fabric runs on without jobs."""


def missing() -> str | None:
    """Why a private Slurm cannot run here (in one line), or None."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"no {', '.join(absent)} (Debian: apt-get install slurmctld slurmd slurm-client munge)"
    if os.geteuid() != 0:
        return "its daemons run as root (SlurmUser=root) and this is not root"
    return None


def free_ports(count: int, avoid: frozenset[int] = frozenset()) -> list[int]:
    """`count` loopback ports free now, below the kernel's ephemeral range (32768 and up by default), so no
    outgoing connection of another process takes one between the choosing and a daemon's bind; from a random
    start, so two Slurms started at once (parallel tests) rarely try the same ones."""
    ports: list[int] = []
    candidate = random.randrange(10_000, 30_000)
    while len(ports) < count:
        candidate = candidate + 1 if candidate < 32_000 else 10_000
        if candidate in avoid:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
        ports.append(candidate)
    return ports


def slurm_conf(state: Path, sockets: Path, munge_socket: Path, nodes: list[str], controller_port: int) -> str:
    """slurm.conf for one machine: state and logs under `state`, spool (slurmstepd's sockets) under `sockets`,
    a short path (a unix socket's path has room for 107 bytes), every node on a loopback port of its own."""
    log = state / "log"
    spare, *ports = free_ports(len(nodes) + 1, avoid=frozenset({controller_port}))
    lines = [
        f"ClusterName=fabricweb{controller_port}",
        "AuthType=auth/munge",
        f"AuthInfo=socket={munge_socket}",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={controller_port}",
        f"SlurmdPort={spare}",  # every node has a Port of its own; this one only keeps off 6818
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={state / 'state'}",
        f"SlurmdSpoolDir={sockets / 'spool'}/%n",
        f"SlurmctldPidFile={state / 'slurmctld.pid'}",
        f"SlurmctldLogFile={log / 'slurmctld.log'}",
        f"SlurmdPidFile={state}/d-%n.pid",
        f"SlurmdLogFile={log}/d-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "MpiDefault=none",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        # A node whose slurmd comes back is usable again at once, not DOWN until an operator resumes it.
        "ReturnToService=2",
        # A client finds an unreachable slurmctld in MessageTimeout - 1 seconds (one connect a second).
        "MessageTimeout=5",
        "SlurmdTimeout=10",  # a node whose slurmd stopped is down* within 10 s, not 5 minutes
        "KillWait=2",  # a cancelled job that ignores SIGTERM gets SIGKILL after 2 s, not 30
        "SchedulerParameters=batch_sched_delay=0",  # schedule a new job on the next tick, not 3 s later
    ]
    # One line a node: the names need not make a hostlist range.
    lines += [
        f"NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=500 Port={port}"
        for node, port in zip(nodes, ports, strict=True)
    ]
    lines.append(f"PartitionName=all Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class PrivateSlurm:
    """Its configuration's path is known before it starts (the central processes are given SLURM_CONF first);
    `start` writes it and starts the daemons once the simulated hosts are known."""

    def __init__(self, children: Children, state: Path) -> None:
        self.children = children
        self.state = state
        self.conf = state / "slurm.conf"
        self.sockets = Path(tempfile.mkdtemp(prefix="fwslurm-", dir="/tmp"))
        self.munge_socket = self.sockets / "munge.sock"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        children.before_stop.append(self.cancel_all)
        children.after_stop.append(lambda: shutil.rmtree(self.sockets, ignore_errors=True))

    def start(self, nodes: list[str]) -> None:
        for folder in ("state", "log"):
            (self.state / folder).mkdir(parents=True, exist_ok=True)
        for node in nodes:
            (self.sockets / "spool" / node).mkdir(parents=True, exist_ok=True)
        key = self.state / "munge.key"
        key.touch(mode=0o600)
        key.write_bytes(os.urandom(128))
        munged = ["munged", "--foreground", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
                  f"--pid-file={self.state / 'munged.pid'}", f"--log-file={self.state / 'log' / 'munged.log'}",
                  f"--seed-file={self.state / 'munge.seed'}"]  # fmt: skip
        self.children.start("munged", munged, self.env, optional=True)
        self._wait("munged's socket", self.munge_socket.exists)
        self.conf.write_text(slurm_conf(self.state, self.sockets, self.munge_socket, nodes, free_ports(1)[0]))
        self.children.start("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)], self.env, optional=True)
        for node in nodes:
            argv = ["slurmd", "-D", "-f", str(self.conf), "-N", node]
            self.children.start(f"slurmd {node}", argv, self.env, optional=True)
        self._wait("every Slurm node idle", lambda: self._all_idle(nodes))
        say(f"Slurm: {len(nodes)} nodes idle (SLURM_CONF={self.conf})")

    def _wait(self, what: str, ready) -> None:
        """As Children.wait_for, but a Slurm daemon that exits is SlurmFailed, saying why from its own log
        (read before its directory goes with the run): the fabric runs on without jobs."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if self.children.stop_requested:
                raise Stopped
            watched = self.children.exited()
            if watched is not None:
                raise SystemExit(f"the {watched.name} exited with status {watched.proc.returncode} before {what}")
            dead = next((c for c in self.children.children if c.optional and c.proc.poll() is not None), None)
            if dead is not None or time.monotonic() > deadline:
                own = self.state / "log" / f"d-{dead.name.split()[-1]}.log" if dead and " " in dead.name else None
                logs = (
                    [own]
                    if own is not None and own.exists()
                    else sorted((self.state / "log").glob("*.log"), key=lambda p: p.stat().st_mtime)
                )
                last = logs[-1].read_text(errors="replace").strip().splitlines()[-2:] if logs else []
                why = f"the {dead.name} exited with status {dead.proc.returncode}" if dead else f"no {what} in time"
                raise SlurmFailed(f"{why} ({logs[-1].name if logs else 'no log'}: {' | '.join(last)})")
            time.sleep(0.1)

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30, check=False)

    def _all_idle(self, nodes: list[str]) -> bool:
        done = self.run("sinfo", "--noheader", "--Node", "--format", "%N %T")
        states = dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)
        return done.returncode == 0 and all(states.get(node) == "idle" for node in nodes)

    def submit(self, nodes: list[str], name: str) -> str | None:
        """A job sleeping on exactly these nodes; its id, or None (said why) when sbatch refuses."""
        done = self.run("sbatch", "--parsable", "-w", ",".join(nodes), "-N", str(len(nodes)), "-J", name,
                        "-o", "/dev/null", "--wrap", "sleep 86400")  # fmt: skip
        if done.returncode != 0:
            say(f"Slurm: job {name} on {','.join(nodes)} not submitted: {done.stderr.strip()}")
            return None
        return done.stdout.strip().split(";")[0]

    def cancel_all(self) -> None:
        """Jobs first, while slurmctld can still cancel them: a slurmd that stops leaves its jobs running."""
        with contextlib.suppress(Exception):
            jobs = self.run("squeue", "--noheader", "--format", "%i").stdout.split()
            if jobs:
                self.run("scancel", *jobs)
                deadline = time.monotonic() + 10
                while self.run("squeue", "--noheader", "--format", "%i").stdout.split():
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.1)


def demo_jobs(net: Path, hosts: list[str]) -> list[tuple[str, list[str]]]:
    """A few jobs across the demo fabric's leaves, on disjoint hosts (a node runs one job at a time): one on
    two hosts of each of the first leaves (its paths cross the uplinks, the faulty one among them), one inside
    a leaf (it crosses no uplink), and one on cn005 (whose port the demo takes down: a would-drain node)."""
    from collectors.mads import netfile

    leaf_of: dict[str, str] = {}
    for a, _, b, _ in netfile.parse(net.read_text()).links():
        ca, switch = (a, b) if a.kind == "ca" else (b, a)
        if ca.kind == "ca" and switch.kind == "switch":
            leaf_of.setdefault(ca.id.split()[0], switch.id)
    by_leaf: dict[str, list[str]] = {}
    for host in sorted(h for h in hosts if h in leaf_of):
        by_leaf.setdefault(leaf_of[host], []).append(host)
    leaves = sorted(by_leaf)
    taken = {"cn005"}
    wide = [h for leaf in leaves[:4] for h in [x for x in by_leaf[leaf] if x not in taken][:2]]
    taken.update(wide)
    inside = [h for h in by_leaf[leaves[-1]] if h not in taken][:3] if leaves else []
    taken.update(inside)
    with_down = ["cn005", *[h for leaf in leaves[1:3] for h in [x for x in by_leaf[leaf] if x not in taken][:1]]]
    jobs = [("allreduce", wide), ("halo", inside), ("cfd", with_down if "cn005" in leaf_of else [])]
    return [(name, nodes) for name, nodes in jobs if len(nodes) >= 2]
