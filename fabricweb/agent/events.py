"""Port events into snapshots: a port that changes sends one at once, not at the next poll.

collectors.watch.PortWatcher calls back (on its device's thread) as soon as libibverbs reports
a port event and the port's attributes changed: down, up, retrained, new LID. Each change
wakes one sender thread, which sends a fresh snapshot of this node. A flapping link raises
events many times a second; they are coalesced so that at most one extra snapshot goes out
per `min_gap_s` (1 s): the first at once, the rest of a storm as one snapshot a gap later,
which reads the port as it is by then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from collectors.watch import PortWatcher, WatchUnavailable

log = logging.getLogger(__name__)


class EventSnapshots:
    """Runs `send()` on its own thread after port changes, never twice within `min_gap_s`."""

    def __init__(self, send: Callable[[], None], min_gap_s: float = 1.0) -> None:
        self._send = send
        self.min_gap_s = min_gap_s
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._last = float("-inf")
        self._thread: threading.Thread | None = None
        self.sent = 0

    def port_changed(self, device: str, port: int, old, new) -> None:
        """PortWatcher's on_change. The first report of each port (old is None) is its baseline."""
        if old is None:
            return
        log.info("port event: %s/%d %s -> %s", device, port, _state(old), _state(new))
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-snapshots", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping.is_set():
                return
            wait = self._last + self.min_gap_s - time.monotonic()
            # Events arriving meanwhile are folded into this one snapshot.
            if wait > 0 and self._stopping.wait(wait):
                return
            self._wake.clear()
            self._last = time.monotonic()
            try:
                self._send()
                self.sent += 1
            except Exception:  # the next event or poll tries again; the thread must live on
                log.exception("port event: could not send a snapshot")


class EventWatch:
    """The agent's watcher: a PortWatcher feeding an EventSnapshots; start() says whether it runs."""

    def __init__(self, send: Callable[[], None], min_gap_s: float = 1.0, pyverbs=None) -> None:
        self.snapshots = EventSnapshots(send, min_gap_s)
        self.watcher = PortWatcher(self.snapshots.port_changed, pyverbs=pyverbs)
        self.running = False

    def start(self) -> bool:
        try:
            self.watcher.start()
        except WatchUnavailable as e:
            log.info("port events not watched: pyverbs %s; ports are read at each poll only", e)
            return False
        self.snapshots.start()
        self.running = True
        log.info("port events watched on %s", ", ".join(self.watcher.devices))
        return True

    def stop(self) -> None:
        if self.running:
            self.watcher.stop()
            self.snapshots.stop()
            self.running = False


def _state(port) -> str:
    """ibstat's words: `Active/LinkUp`, `Down/Polling`."""
    return f"{IBSTAT_STATES.get(port.state, port.state)}/{PHYS_STATES.get(port.phys_state, port.phys_state)}"
