"""A real Slurm cluster for the tests: its own munged, slurmctld and one slurmd per node, all on 127.0.0.1 with
ports and sockets of its own (test workers run several at once), and the client tools pointed at it; every process,
jobs included, stops with the test."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from fabricweb.runfabric.slurm import free_ports, slurm_conf
from harness import listens, wait_for
from harness import stop as stop_process

HAVE_SLURM = os.geteuid() == 0 and all(
    shutil.which(tool) for tool in ("slurmctld", "slurmd", "squeue", "sbatch", "scontrol", "sinfo", "munged")
)
needs_slurm = pytest.mark.skipif(not HAVE_SLURM, reason="needs root, slurmctld, slurmd, slurm-client and munge")

# Variables the client tools read as defaults (SQUEUE_FORMAT, SBATCH_PARTITION...) or that a CI job running inside
# a real Slurm job would pass on to ours.
_INHERITED_SLURM = ("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SINFO_", "SCANCEL_", "SCONTROL_")


class Slurm:
    """munged on DIR/munge.sock, slurmctld and a slurmd per node reading DIR/slurm.conf; one partition, `all`,
    of one-CPU nodes, so that a node runs one job at a time."""

    def __init__(self, directory: Path, nodes: list[str], request) -> None:
        self.directory = directory
        self.nodes = list(nodes)
        self.conf = directory / "slurm.conf"
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(_INHERITED_SLURM)}
        self.env["SLURM_CONF"] = str(self.conf)
        self.log = directory / "log"
        self.munged: subprocess.Popen | None = None
        self.slurmctld: subprocess.Popen | None = None
        self.slurmds: list[subprocess.Popen] = []
        # Sockets (munged's, and slurmstepd's in the spool: <node>_<job>.<step>) live in a short directory of
        # their own: a unix socket's path has room for 107 bytes, and a test worker's tmp_path can be longer.
        self.sockets = Path(tempfile.mkdtemp(prefix="fwslurm-", dir="/tmp"))
        request.addfinalizer(self.stop)
        for folder in ("state", "log"):
            (directory / folder).mkdir(parents=True)
        for node in self.nodes:
            (self.sockets / "spool" / node).mkdir(parents=True)
        self.munge_socket = self.sockets / "munge.sock"
        # A unix socket's path has room for 107 bytes.
        assert len(str(self.munge_socket)) < 100, f"{self.munge_socket} is too long for a unix socket"
        self.munged = self._start_munged()
        self.controller_port = free_ports(1)[0]
        self.conf.write_text(slurm_conf(directory, self.sockets, self.munge_socket, self.nodes, self.controller_port))
        self.slurmctld = self._daemon("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._wait_until(lambda: listens(self.controller_port), "slurmctld to listen")
        for node in self.nodes:
            self.slurmds.append(self._daemon(f"d-{node}", ["slurmd", "-D", "-f", str(self.conf), "-N", node]))
        self._wait_until(lambda: all(self._states().get(node) == "idle" for node in self.nodes), "every node idle")

    def _start_munged(self) -> subprocess.Popen:
        key = self.directory / "munge.key"
        key.touch(mode=0o600)
        key.write_bytes(os.urandom(128))
        munged = self._daemon(
            "munged",
            ["munged", "--foreground", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
             f"--pid-file={self.directory / 'munged.pid'}", f"--log-file={self.log / 'munged.log'}",
             f"--seed-file={self.directory / 'munge.seed'}"],
        )  # fmt: skip
        self._wait_until(self.munge_socket.exists, "munged's socket")
        return munged

    def _daemon(self, name: str, cmd: list[str]) -> subprocess.Popen:
        with open(self.log / f"{name}.out", "wb") as out:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.directory)

    def _wait_until(self, check, what: str, timeout: float = 30.0) -> None:
        """Polls `check`; fails at once, with the daemons' logs, when one of them has exited, or at the timeout."""
        wait_for(what, check, timeout, watch=self._daemons(), log=self.logs)

    def _daemons(self) -> list[subprocess.Popen]:
        return [p for p in (self.munged, self.slurmctld, *self.slurmds) if p is not None]

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, for a failure message."""
        tails = []
        for log in sorted(self.log.iterdir()):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            if text:
                tails.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(tails)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        """A client tool against this cluster. In DIR: sbatch leaves a job's slurm-<id>.out where it ran."""
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30, cwd=self.directory)
        if check and r.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr}{r.stdout}")
        return r

    def submit(self, nodes: list[str], name: str = "job", seconds: int = 600) -> str:
        """A batch job sleeping on exactly `nodes` (idle ones: a node runs one job at a time), once it runs."""
        where = ["-w", ",".join(nodes), "-N", str(len(nodes))]
        job_id = self.run("sbatch", *where, "-J", name, "--parsable", "--wrap", f"sleep {seconds}").stdout.strip()
        # slurmctld starts jobs from a loop that ticks once a second. Its first pass comes 3 s after it started, when
        # it reads batch_sched_delay=0: a cluster's first job takes ~3 s to run, the next ones up to a second.
        self._wait_until(lambda: self._jobs().get(job_id) == "RUNNING", f"job {job_id} to run on {nodes}")
        return job_id

    def cancel(self, job_id: str) -> None:
        """scancel, then until the job has left squeue: its nodes are free for the next one."""
        self.run("scancel", job_id)
        self._wait_until(lambda: job_id not in self._jobs(), f"job {job_id} to leave squeue")

    def _jobs(self) -> dict[str, str]:
        """squeue's jobs (pending, running, completing) -> state, e.g. RUNNING."""
        out = self.run("squeue", "-h", "-o", "%i %T").stdout
        return dict(line.split() for line in out.splitlines())

    def _states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
        return dict(line.split() for line in out.splitlines())

    def node_state(self, node: str) -> tuple[str, str]:
        """(state as sinfo's %T prints it: idle, allocated, draining, drained, down*..., the reason or "")."""
        state, reason = self.run("sinfo", "-h", "-N", "-n", node, "-o", "%T|%E").stdout.strip().split("|", 1)
        # sinfo prints a node without a reason as "none".
        return state, "" if reason == "none" else reason

    def drain(self, node: str, reason: str) -> None:
        """As an operator does: no new jobs on `node`; a running one goes on (draining), then it is drained."""
        self.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")

    def resume(self, node: str) -> None:
        """Back in service, once it answers: slurmctld pings a resumed node, `idle*` (not responding) until then."""
        self.run("scontrol", "update", f"NodeName={node}", "State=RESUME")
        self._wait_until(lambda: not self.node_state(node)[0].endswith("*"), f"{node} to answer after its resume")

    def squeue_json(self) -> dict:
        """`squeue --json`: {"meta", "errors", "jobs"}. It exits 0 even when it could not reach slurmctld, with
        "jobs" empty and the failure in "errors"."""
        return json.loads(self.run("squeue", "--json").stdout)

    def stop_controller(self) -> None:
        """slurmctld goes away, as in an outage; the nodes and their jobs stay."""
        if self.slurmctld is not None:
            stop_process(self.slurmctld)

    def stop(self) -> None:
        """Jobs first, while slurmctld can still cancel them: a slurmd that stops leaves its jobs running."""
        if self.slurmctld is not None and self.slurmctld.poll() is None:
            with contextlib.suppress(Exception):
                jobs = self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    deadline = time.monotonic() + 10
                    while self.run("squeue", "-h", "-o", "%i", check=False).stdout.split():
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.05)
        for daemon in (*self.slurmds, self.slurmctld):
            if daemon is not None:
                stop_process(daemon)
        self._kill_leftovers()
        if self.munged is not None:
            stop_process(self.munged)
        shutil.rmtree(self.sockets, ignore_errors=True)

    def _kill_leftovers(self) -> None:
        """Whatever still runs with this cluster's SLURM_CONF: the slurmstepd and script of a job whose slurmd or
        slurmctld went first. slurmstepd ignores SIGTERM while it cannot reach its slurmd."""
        mark = f"\0SLURM_CONF={self.conf}\0".encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if mark in b"\0" + (proc / "environ").read_bytes():
                    os.kill(int(proc.name), signal.SIGKILL)
