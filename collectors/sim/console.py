"""Keeping a running ibsim in line with the active faults, through its console (`--ibsim-ctl FIFO`).

ibsim reads console commands on its stdin; runfabric makes that a FIFO and keeps a writer
open on it. Each step the simulator works out what ibsim should look like (which switches
and links are down, which switches are mute, each switch port's symbol errors), and writes
only the commands that take ibsim from what was last applied there (kept in the state) to
that. The syntax, as ibsim 0.10 takes it:

    Unlink "leaf03"             every link of the switch down (its power is off)
    ReLink "leaf03"             every link it had back: also those unlinked one by one
    Unlink "leaf03"[12]         one link down, both ends Down/Polling
    ReLink "leaf03"[12]         back, in Initialize until a subnet manager sweeps it
    Error "leaf03" 100          drop 100 % of the MADs to the switch: it stops answering
    Error "leaf03" 0
    PerformanceSet "leaf03"[12] PortCounters.SymbolErrorCounter=77
"""

from __future__ import annotations

import errno
import os
import select
import stat
from dataclasses import dataclass

from .cabling import Cabling

SYMBOL_ERROR_MAX = 0xFFFF  # a 16-bit PMA counter stops at all-ones


@dataclass(slots=True)
class Wanted:
    """What ibsim should show: link keys are their switch end's ("leaf01/3")."""

    switches_down: set[str]
    links_down: set[str]
    muted: set[str]
    symbol_errors: dict[str, int]


def empty_applied() -> dict:
    return {"switches_down": [], "links_down": [], "muted": [], "symbol_errors": {}}


def commands(cabling: Cabling, applied: dict, wanted: Wanted) -> list[str]:
    """The console commands that take ibsim from `applied` (a state dict) to `wanted`."""
    out = []
    was_down = set(applied["switches_down"])
    links_down = set(applied["links_down"])  # what ibsim has down after each command, as we go
    # A whole-switch ReLink restores all its links, even one whose far switch is still down:
    # those come after, as single links, with the rest.
    for name in sorted(was_down - wanted.switches_down):
        out.append(f'ReLink "{name}"')
        links_down -= {link.key for link in cabling.links_of(name)}
    for name in sorted(wanted.switches_down - was_down):
        out.append(f'Unlink "{name}"')
        links_down |= {link.key for link in cabling.links_of(name)}
    for key in sorted(wanted.links_down - links_down, key=_port_order):
        out.append(f"Unlink {_port(key)}")
    for key in sorted(links_down - wanted.links_down, key=_port_order):
        out.append(f"ReLink {_port(key)}")
    muted = set(applied["muted"])
    out += [f'Error "{name}" 100' for name in sorted(wanted.muted - muted)]
    out += [f'Error "{name}" 0' for name in sorted(muted - wanted.muted)]
    sent = applied["symbol_errors"]
    for key in sorted(wanted.symbol_errors, key=_port_order):
        value = min(wanted.symbol_errors[key], SYMBOL_ERROR_MAX)
        if sent.get(key, 0) != value:
            out.append(f"PerformanceSet {_port(key)} PortCounters.SymbolErrorCounter={value}")
    return out


def applied_state(wanted: Wanted) -> dict:
    return {
        "switches_down": sorted(wanted.switches_down),
        "links_down": sorted(wanted.links_down, key=_port_order),
        "muted": sorted(wanted.muted),
        "symbol_errors": {k: min(v, SYMBOL_ERROR_MAX) for k, v in sorted(wanted.symbol_errors.items()) if v},
    }


def _port(key: str) -> str:
    switch, number = key.rsplit("/", 1)
    return f'"{switch}"[{number}]'


def _port_order(key: str) -> tuple[str, int]:
    switch, number = key.rsplit("/", 1)
    return switch, int(number)


class Console:
    """The write end of ibsim's console FIFO, opened without blocking: a simulator must keep
    stepping its trees when no ibsim reads the FIFO, and say why its commands wait."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.problem: str | None = None  # why the last commands could not be written
        self._missed = False  # a reader was missing since the last write: the next one is a new ibsim

    def check(self) -> None:
        """A path that exists and is not a FIFO is a mistake worth stopping for (ValueError)."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISFIFO(mode):
            raise ValueError(f"--ibsim-ctl {self.path} is not a FIFO (runfabric makes one: mkfifo)")

    def connect(self) -> bool | None:
        """None when nobody reads the FIFO. Otherwise whether the reader is new: one that came
        after a missing one is an ibsim started since, which knows fabric.net and no command."""
        if self.fd is not None and _reader_gone(self.fd):
            self._fail(f"ibsim stopped reading {self.path}")
            return None
        if self.fd is None:
            try:
                # O_NONBLOCK: with no reader the open fails at once (ENXIO) instead of waiting.
                self.fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                why = "is ibsim running with it on its stdin?" if e.errno in (errno.ENXIO, errno.ENOENT) else e.strerror
                self._fail(f"nobody reads {self.path} ({why})")
                return None
            os.set_blocking(self.fd, True)  # then a burst of commands waits for ibsim to read it
        new, self._missed, self.problem = self._missed, False, None
        return new

    def send(self, lines: list[str]) -> bool:
        """Write the commands to a connected FIFO; False (and `problem` set) when that failed."""
        data = "".join(line + "\n" for line in lines).encode()
        try:
            while data:  # a signal can cut a write short
                data = data[os.write(self.fd, data) :]
        except OSError as e:
            self._fail(f"ibsim stopped reading {self.path}" if e.errno == errno.EPIPE else f"{self.path}: {e.strerror}")
            return False
        self.problem = None
        return True

    def _fail(self, problem: str) -> None:
        self.close()
        self.problem, self._missed = problem, True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _reader_gone(fd: int) -> bool:
    """A FIFO's write end polls POLLERR once no reader holds it."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))
