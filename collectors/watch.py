"""Port-state watcher on libibverbs' asynchronous events, through pyverbs.

A poll says within one interval that a port went down; the kernel says it at once,
as an async event (IBV_EVENT_PORT_ERR, PORT_ACTIVE, LID_CHANGE, ...) on every open
context of the device. pyverbs' AsyncEvent carries only the event type, not the
port, so on each port event the watcher re-queries every port of that device and
calls back for each port whose attributes changed.

Why the threads block in poll(), not in Context.get_async_event():
rdma-core 44's pyverbs calls ibv_get_async_event() without releasing the GIL (its
device module never releases it), so a thread blocked there freezes every other
thread of the process, and nothing can wake it: closing the context from another
thread while it blocks would free what libibverbs is reading. So each device's
thread waits in poll() on the context's async event descriptor plus a stop pipe,
and calls get_async_event() only when poll() says an event is queued, when it
returns at once. stop() writes to the pipe; each thread leaves its loop and closes
its own context.

pyverbs does not expose the async descriptor (ibv_context.async_fd), so it is found
by what ibv_open_device() opens: the command fd (which pyverbs does expose, as
cmd_fd) and the async event fd, an anonymous inode the kernel names
"[infinibandevent]". If that cannot be told apart (another thread opening files
at the same moment), the open is retried; failing that, the device is reported
through on_error and not watched, rather than risking a blocking call.

Callbacks run on the device's watcher thread; keep them short or hand off.
Exceptions they raise are reported through on_error, never kill the thread.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable, Iterable

from .model import VerbsPort
from .verbs import Pyverbs, load_pyverbs, port_from_attr

log = logging.getLogger(__name__)

OnChange = Callable[[str, int, VerbsPort | None, VerbsPort], None]
OnError = Callable[[str, str], None]

# IBV_EVENT_DEVICE_FATAL (libibverbs ABI). Every other event we can receive here is a
# port event (PORT_ERR, PORT_ACTIVE, LID_CHANGE, SM_CHANGE, ...: we create no QP or
# CQ that could raise the others), and each one leads to a re-query of the ports.
DEVICE_FATAL = 8
_ASYNC_FD_NAME = "anon_inode:[infinibandevent]"
_OPEN_TRIES = 3
# Drain at most this many queued events before one re-query (a flapping port queues many).
_DRAIN = 64


class WatchUnavailable(RuntimeError):
    """There is nothing to watch: pyverbs is not installed, or this host has no RDMA devices."""


def _fd_links() -> dict[int, str]:
    """This process's descriptors and what they point at."""
    links = {}
    for entry in os.listdir("/proc/self/fd"):
        try:
            links[int(entry)] = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue  # the descriptor listdir itself used, closed by now
    return links


def find_async_fd(before: dict[int, str], after: dict[int, str], cmd_fd: int) -> int | None:
    """The async event descriptor ibv_open_device() opened between `before` and `after`.

    Compares targets as well as numbers: a number free in `before` may be reused.
    """
    new = {fd: link for fd, link in after.items() if before.get(fd) != link and fd != cmd_fd}
    named = [fd for fd, link in new.items() if link == _ASYNC_FD_NAME]
    if len(named) == 1:
        return named[0]
    if not named and len(new) == 1:
        # ibv_open_device opens exactly two descriptors; the one that is not cmd_fd is
        # the async one, whatever the kernel calls it.
        (fd,) = new
        return fd
    return None


class _DeviceWatch:
    def __init__(self, name: str, ctx, event_fd: int, ports: int) -> None:
        self.name = name
        self.ctx = ctx
        self.event_fd = event_fd
        self.ports = ports
        self.last: dict[int, VerbsPort] = {}
        self.thread: threading.Thread | None = None


class PortWatcher:
    """Calls `on_change(device, port, old, new)` as soon as a port's verbs attributes change.

    `old` is None the first time a port is seen: start() reports every port once, so
    the caller has a baseline. `on_error(device, message)` receives every failure
    (a device that will not open, a port that cannot be queried, a watcher thread
    that ends); by default they are logged.

    Use as a context manager, or call start() and stop().
    """

    def __init__(
        self,
        on_change: OnChange,
        on_error: OnError | None = None,
        *,
        devices: Iterable[str] | None = None,
        resync_s: float | None = 60.0,
        pyverbs: Pyverbs | None = None,
    ) -> None:
        self._on_change = on_change
        self._on_error = on_error or (lambda dev, msg: log.error("verbs watcher %s: %s", dev, msg))
        self._only = list(devices) if devices is not None else None
        # Events are queued by the kernel, so none is missed; the periodic re-query is a
        # safety net for a change that raised no event.
        self._resync_ms = -1 if resync_s is None else int(resync_s * 1000)
        self._pyverbs = pyverbs
        self._watches: list[_DeviceWatch] = []
        self._stop_r = self._stop_w = -1
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> None:
        """Open every device, report each port's state, and start one thread per device.

        Raises WatchUnavailable when pyverbs is missing or libibverbs finds no device;
        a device that fails to open is reported through on_error and skipped.
        """
        if self._watches:
            raise RuntimeError("watcher already started")
        mods = self._pyverbs or load_pyverbs()
        if mods is None:
            raise WatchUnavailable("not installed")
        device_mod, errors = mods
        try:
            names = self._only if self._only is not None else [_text(d.name) for d in device_mod.get_device_list()]
        except errors.PyverbsRDMAError as e:
            raise WatchUnavailable("no devices") from e
        if not names:
            raise WatchUnavailable("no devices")
        self._stop_r, self._stop_w = os.pipe()
        try:
            for name in names:
                try:
                    watch = self._open(device_mod, name)
                except errors.PyverbsError as e:
                    self._error(name, f"not watched: {e}")
                    continue
                if watch is not None:
                    self._watches.append(watch)
                    self._requery(watch, errors)
        except BaseException:
            # Leave nothing open behind a failed start.
            for watch in self._watches:
                watch.ctx.close()
            self._watches = []
            self._close_pipe()
            raise
        for watch in self._watches:
            watch.thread = threading.Thread(
                target=self._run, args=(watch, errors, self._stop_r), name=f"verbs-watch-{watch.name}"
            )
            watch.thread.daemon = True  # never keeps a worker from exiting; stop() is the clean path
            watch.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Wake every thread through the stop pipe, wait for them, and close the pipe.

        Each thread closes its own context on the way out, so no context is closed
        while in use.
        """
        if self._stop_w < 0:
            return
        os.write(self._stop_w, b"x")
        for watch in self._watches:
            if watch.thread is not None:
                watch.thread.join(timeout)
                if watch.thread.is_alive():
                    self._error(watch.name, f"watcher thread did not stop within {timeout} s")
        self._close_pipe()
        self._watches = []

    def _close_pipe(self) -> None:
        os.close(self._stop_r)
        os.close(self._stop_w)
        self._stop_r = self._stop_w = -1

    def __enter__(self) -> PortWatcher:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- state --------------------------------------------------------------
    @property
    def devices(self) -> list[str]:
        """Devices being watched."""
        return [w.name for w in self._watches if w.thread is None or w.thread.is_alive()]

    def ports(self) -> dict[tuple[str, int], VerbsPort]:
        """The last known attributes of every watched port."""
        with self._lock:
            return {(w.name, n): p for w in self._watches for n, p in w.last.items()}

    # -- internals ----------------------------------------------------------
    def _open(self, device_mod, name: str) -> _DeviceWatch | None:
        for _ in range(_OPEN_TRIES):
            before = _fd_links()
            ctx = device_mod.Context(name=name)
            event_fd = find_async_fd(before, _fd_links(), ctx.cmd_fd)
            if event_fd is not None:
                try:
                    ports = int(ctx.query_device().phys_port_cnt)
                except Exception:
                    ctx.close()
                    raise
                return _DeviceWatch(name, ctx, event_fd, ports)
            ctx.close()
        self._error(name, "not watched: cannot tell its async event descriptor apart from other new descriptors")
        return None

    def _run(self, watch: _DeviceWatch, errors, stop_fd: int) -> None:
        why = "stopped"
        try:
            poller = select.poll()
            poller.register(stop_fd, select.POLLIN)
            poller.register(watch.event_fd, select.POLLIN)
            while True:
                ready = dict(poller.poll(self._resync_ms))
                if stop_fd in ready:  # written by stop(), or closed by a stop() that gave up waiting
                    break
                flags = ready.get(watch.event_fd, 0)
                if flags & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                    # The kernel reports POLLERR once the device is gone (disassociated).
                    why = "its async event queue failed (device removed or reset?)"
                    break
                if flags & select.POLLIN:
                    self._drain(watch, poller)
                self._requery(watch, errors)
        except errors.PyverbsError as e:
            why = f"reading its async events failed: {e}"
        except Exception as e:
            why = f"watcher failed: {type(e).__name__}: {e}"
        finally:
            try:
                watch.ctx.close()
            except Exception as e:
                self._error(watch.name, f"closing the device failed: {e}")
        if why != "stopped":
            self._error(watch.name, f"no longer watched: {why}")

    def _drain(self, watch: _DeviceWatch, poller: select.poll) -> None:
        """Read and acknowledge the queued events; poll() said at least one is there."""
        for _ in range(_DRAIN):
            event = watch.ctx.get_async_event()  # returns at once: an event is queued
            kind = int(event.event_type)
            event.ack()
            if kind == DEVICE_FATAL:
                self._error(watch.name, "IBV_EVENT_DEVICE_FATAL: the device needs a reset")
            if not any(fd == watch.event_fd and flags & select.POLLIN for fd, flags in poller.poll(0)):
                return

    def _requery(self, watch: _DeviceWatch, errors) -> None:
        for number in range(1, watch.ports + 1):
            try:
                new = port_from_attr(watch.ctx.query_port(number))
            except errors.PyverbsError as e:
                self._error(watch.name, f"port {number}: {e}")
                continue
            with self._lock:
                old = watch.last.get(number)
                if new == old:
                    continue
                watch.last[number] = new
            try:
                self._on_change(watch.name, number, old, new)
            except Exception as e:
                self._error(watch.name, f"on_change raised {type(e).__name__}: {e}")

    def _error(self, device: str, message: str) -> None:
        try:
            self._on_error(device, message)
        except Exception:
            log.exception("verbs watcher %s: on_error raised while reporting %r", device, message)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
