"""runfabric's children: each started as the leader of a process group of its own, waited for, and stopped
(SIGTERM to every group, SIGKILL to what is left after the grace period)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
PY = sys.executable
STOP_GRACE_S = 10.0
START_TIMEOUT_S = 30.0


def say(message: str) -> None:
    print(f"runfabric: {message}", file=sys.stderr, flush=True)


class Stopped(Exception):
    """Ctrl-C or SIGTERM arrived while starting up."""


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    stop_signal: int = signal.SIGTERM  # what stop() sends first
    optional: bool = False  # its exit stops nothing (the demo's Slurm: the fabric runs on without jobs)


class Children:
    """The processes started, each the leader of its own process group (so its own children go with it)."""

    def __init__(self, log=None) -> None:
        self.children: list[Child] = []
        self.stop_requested = False
        self.log = log  # an open file: the children's output (banners, request lines) goes there, not to the terminal
        # Called before the groups are signalled (a scheduler cancels its jobs while it can), and after they are gone.
        self.before_stop: list[Callable[[], None]] = []
        self.after_stop: list[Callable[[], None]] = []

    def note(self, message: str) -> None:
        """Said in the log when there is one (the terminal keeps the login as its last lines), else on stderr."""
        if self.log is None:
            say(message)
        else:
            print(f"runfabric: {message}", file=self.log, flush=True)

    def start(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        stdin=subprocess.DEVNULL,
        stdout=None,
        cwd=BASE_DIR,
        stop_signal: int = signal.SIGTERM,
        optional: bool = False,
    ) -> None:
        out = self.log if stdout is None else stdout
        try:
            proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=out, stderr=self.log, process_group=0)
        except OSError as e:
            raise SystemExit(f"cannot start the {name}: {e}") from None
        self.children.append(Child(name, proc, stop_signal, optional))

    def exited(self) -> Child | None:
        """A child that exited on its own (optional ones are not watched)."""
        return next((c for c in self.children if not c.optional and c.proc.poll() is not None), None)

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = START_TIMEOUT_S) -> None:
        """Wait until `ready()`, giving up if asked to stop, if a child dies, or after `timeout`."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.stop_requested:
                raise Stopped
            dead = self.exited()
            if dead is not None:
                raise SystemExit(f"the {dead.name} exited with status {dead.proc.returncode} before {what}")
            if time.monotonic() > deadline:
                raise SystemExit(f"no {what} after {timeout:g} s")
            time.sleep(0.1)

    def stop(self) -> None:
        """Each group's stop signal (SIGTERM), SIGKILL to any still there after the grace period."""
        for hook in self.before_stop:
            hook()
        self._signal_all(None)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self.children:
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"the {child.name} did not stop in {STOP_GRACE_S:g} s; killing it")
        # A leader that stopped may leave members behind (pool processes): kill what is left of each group.
        self._signal_all(signal.SIGKILL)
        for child in self.children:
            child.proc.wait()
        for hook in self.after_stop:
            hook()

    def stop_one(self, name: str) -> None:
        """Stop one child (and its group) on purpose: it is no longer watched."""
        child = next(c for c in self.children if c.name == name)
        self.children.remove(child)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGTERM)
        try:
            child.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            say(f"the {name} did not stop in {STOP_GRACE_S:g} s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait()

    def _signal_all(self, sig: int | None) -> None:
        """`sig` to every group; None: each its own stop signal."""
        for child in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, child.stop_signal if sig is None else sig)
