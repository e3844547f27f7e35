"""Covers collectors/model.py, collectors/watch.py.

Async-event port watcher: callbacks on up/down/LID change within a second, clean stop, loud failures.

Runs against the fake pyverbs, whose Context opens a real event descriptor that is
readable exactly when an event is queued, so the watcher's poll() path is the one
it takes on hardware.
"""

from __future__ import annotations

import errno
import importlib
import os
import threading
import time

import pytest

from collectors.model import VerbsPort
from collectors.watch import PortWatcher, WatchUnavailable, find_async_fd

LIMIT_S = 1.0  # a port down is reported in under a second
LATENCIES: list[float] = []


class Recorder:
    """Collects callbacks with the time each arrived."""

    def __init__(self) -> None:
        self.changes: list[tuple[float, str, int, VerbsPort | None, VerbsPort]] = []
        self.errors: list[tuple[str, str]] = []
        self._cond = threading.Condition()

    def on_change(self, device, port, old, new) -> None:
        with self._cond:
            self.changes.append((time.monotonic(), device, port, old, new))
            self._cond.notify_all()

    def on_error(self, device, message) -> None:
        with self._cond:
            self.errors.append((device, message))
            self._cond.notify_all()

    def wait(self, what, timeout: float = 2.0):
        with self._cond:
            assert self._cond.wait_for(lambda: what(self), timeout), f"timed out: {self.changes} {self.errors}"

    def after(self, n: int):
        """Changes after the first n."""
        return [c[1:] for c in self.changes[n:]]


@pytest.fixture
def events(fake_pyverbs):
    return importlib.import_module("pyverbs.enums").ibv_event_type


@pytest.fixture
def fabric(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0", ports=2)
    return fake_pyverbs


@pytest.fixture
def rec():
    return Recorder()


@pytest.fixture
def watcher(fabric, rec):
    w = PortWatcher(rec.on_change, rec.on_error)
    w.start()
    yield w
    w.stop()


def _push_and_time(fabric, rec, device, event, expected_changes=1):
    """Push one event, wait for its callbacks; returns the latency of the first."""
    seen = len(rec.changes)
    t0 = time.monotonic()
    fabric.push_event(device, event)
    rec.wait(lambda r: len(r.changes) >= seen + expected_changes)
    latency = rec.changes[seen][0] - t0
    LATENCIES.append(latency)
    return latency


def test_it_reports_every_port_once_at_start_with_no_old_state(watcher, rec):
    assert [(d, p, old) for _, d, p, old, _ in rec.changes] == [("mlx5_0", 1, None), ("mlx5_0", 2, None)]
    assert rec.changes[0][4] == VerbsPort(
        state=4,
        phys_state=5,
        speed="EDR",
        lanes=4,
        active_mtu=4096,
        max_mtu=4096,
        link_layer="InfiniBand",
        lid=1,
        sm_lid=1,
    )
    assert watcher.devices == ["mlx5_0"]
    assert set(watcher.ports()) == {("mlx5_0", 1), ("mlx5_0", 2)}


def test_it_calls_back_when_a_port_goes_down(watcher, fabric, rec, events):
    fabric.set_port("mlx5_0", 1, state=1, phys_state=3, active_speed=0, active_width=0)
    latency = _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ERR)
    assert latency < LIMIT_S
    [(device, port, old, new)] = rec.after(2)
    assert (device, port) == ("mlx5_0", 1)
    assert (old.state, old.phys_state, old.speed) == (4, 5, "EDR")
    assert (new.state, new.phys_state, new.speed, new.lanes) == (1, 3, None, None)
    assert rec.errors == []


def test_it_calls_back_when_a_port_comes_up(fabric, rec, events):
    fabric.set_port("mlx5_0", 2, state=1, phys_state=2)
    with PortWatcher(rec.on_change, rec.on_error):
        fabric.set_port("mlx5_0", 2, state=4, phys_state=5)
        assert _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ACTIVE) < LIMIT_S
        [(_, port, old, new)] = rec.after(2)
    assert (port, old.state, new.state) == (2, 1, 4)


def test_it_calls_back_on_a_lid_change(watcher, fabric, rec, events):
    fabric.set_port("mlx5_0", 2, lid=0x42)
    assert _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_LID_CHANGE) < LIMIT_S
    [(_, port, old, new)] = rec.after(2)
    assert (port, old.lid, new.lid) == (2, 1, 0x42)


def test_it_calls_back_when_the_subnet_manager_moves(watcher, fabric, rec, events):
    fabric.set_port("mlx5_0", 1, sm_lid=7)
    assert _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_SM_CHANGE) < LIMIT_S
    assert [(p, new.sm_lid) for _, p, _, new in rec.after(2)] == [(1, 7)]


def test_it_reports_a_link_that_retrained_slower(watcher, fabric, rec, events):
    fabric.set_port("mlx5_0", 1, active_speed=4, active_width=1)  # 4X EDR back as 1X QDR
    _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ACTIVE)
    [(_, _, old, new)] = rec.after(2)
    assert (old.speed, old.lanes, new.speed, new.lanes) == ("EDR", 4, "QDR", 1)


def test_an_event_that_changes_nothing_calls_nobody(watcher, fabric, rec, events):
    fabric.push_event("mlx5_0", events.IBV_EVENT_PKEY_CHANGE)
    deadline = time.monotonic() + 2
    while fabric.acked < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    assert fabric.acked == 1
    assert rec.after(2) == []


def test_it_watches_each_device_on_its_own(fake_pyverbs, rec, events):
    fake_pyverbs.add_device("mlx5_0")
    fake_pyverbs.add_device("mlx5_1")
    with PortWatcher(rec.on_change, rec.on_error) as w:
        assert sorted(w.devices) == ["mlx5_0", "mlx5_1"]
        fake_pyverbs.set_port("mlx5_1", 1, state=1)
        _push_and_time(fake_pyverbs, rec, "mlx5_1", events.IBV_EVENT_PORT_ERR)
        assert [(d, p) for d, p, _, _ in rec.after(2)] == [("mlx5_1", 1)]


def test_it_can_watch_only_named_devices(fake_pyverbs, rec):
    fake_pyverbs.add_device("mlx5_0")
    fake_pyverbs.add_device("mlx5_1")
    with PortWatcher(rec.on_change, rec.on_error, devices=["mlx5_1"]) as w:
        assert w.devices == ["mlx5_1"]
        assert len(fake_pyverbs.open_contexts()) == 1


def test_every_event_is_acknowledged_and_none_is_waited_for_inside_pyverbs(watcher, fabric, rec, events):
    # A burst, as a flapping port sends: every event read and acked, no blocking read.
    for i in range(20):
        fabric.set_port("mlx5_0", 1, state=1 if i % 2 == 0 else 4)
        fabric.push_event("mlx5_0", events.IBV_EVENT_PORT_ERR if i % 2 == 0 else events.IBV_EVENT_PORT_ACTIVE)
    deadline = time.monotonic() + 2
    while fabric.acked < 20 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert (fabric.delivered, fabric.acked) == (20, 20)
    # With rdma-core 44's pyverbs a get_async_event on an empty queue blocks holding the GIL.
    assert fabric.blocking_gets == 0
    while watcher.ports()[("mlx5_0", 1)].state != 4 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert watcher.ports()[("mlx5_0", 1)].state == 4  # where the burst ended
    assert rec.errors == []


def test_a_periodic_requery_catches_a_change_that_raised_no_event(fabric, rec):
    with PortWatcher(rec.on_change, rec.on_error, resync_s=0.05):
        fabric.set_port("mlx5_0", 2, state=1)
        rec.wait(lambda r: len(r.changes) >= 3)
    assert [(p, new.state) for _, p, _, new in rec.after(2)] == [(2, 1)]


# -- stopping -----------------------------------------------------------------


def _watch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("verbs-watch-") and t.is_alive()]


def test_stop_wakes_the_waiting_threads_and_closes_every_context(fabric, rec):
    w = PortWatcher(rec.on_change, rec.on_error)
    w.start()
    assert len(fabric.open_contexts()) == 1 and len(_watch_threads()) == 1
    time.sleep(0.05)  # let the thread settle in poll()
    t0 = time.monotonic()
    w.stop()
    assert time.monotonic() - t0 < LIMIT_S
    assert _watch_threads() == []
    assert fabric.open_contexts() == []
    assert rec.errors == []
    w.stop()  # a second stop does nothing


def test_a_stopped_watcher_can_start_again(fabric, rec, events):
    w = PortWatcher(rec.on_change, rec.on_error)
    w.start()
    w.stop()
    w.start()
    try:
        fabric.set_port("mlx5_0", 1, state=1)
        _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ERR)
    finally:
        w.stop()
    assert fabric.open_contexts() == []


# -- failures are reported, never silent ---------------------------------------------


def test_without_pyverbs_there_is_nothing_to_watch(no_pyverbs, rec):
    with pytest.raises(WatchUnavailable, match="not installed"):
        PortWatcher(rec.on_change).start()


def test_without_rdma_devices_there_is_nothing_to_watch(fake_pyverbs, rec):
    fake_pyverbs.rdma_available = False
    with pytest.raises(WatchUnavailable, match="no devices"):
        PortWatcher(rec.on_change).start()
    fake_pyverbs.rdma_available = True
    with pytest.raises(WatchUnavailable, match="no devices"):
        PortWatcher(rec.on_change).start()


def test_a_device_that_will_not_open_is_reported_and_the_others_watched(fake_pyverbs, rec, events):
    fake_pyverbs.add_device("mlx5_0", open_errno=errno.EACCES)
    fake_pyverbs.add_device("mlx5_1")
    with PortWatcher(rec.on_change, rec.on_error) as w:
        assert w.devices == ["mlx5_1"]
        assert rec.errors == [("mlx5_0", "not watched: Failed to open device mlx5_0. Errno: 13, Permission denied")]
        fake_pyverbs.set_port("mlx5_1", 1, state=1)
        _push_and_time(fake_pyverbs, rec, "mlx5_1", events.IBV_EVENT_PORT_ERR)


def test_a_port_that_cannot_be_queried_is_reported_and_the_other_still_watched(watcher, fabric, rec, events):
    fabric.set_port("mlx5_0", 1, query_errno=errno.EIO)
    fabric.set_port("mlx5_0", 2, state=1)
    _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ERR)
    assert [(p, new.state) for _, p, _, new in rec.after(2)] == [(2, 1)]
    assert rec.errors == [("mlx5_0", "port 1: Failed to query port 1. Errno: 5, Input/output error")]


def test_a_broken_event_queue_is_reported_and_its_context_closed(watcher, fabric, rec):
    fabric.break_events("mlx5_0", errno.EIO)
    rec.wait(lambda r: r.errors)
    assert rec.errors == [
        (
            "mlx5_0",
            "no longer watched: reading its async events failed: "
            "Failed to get async event. Errno: 5, Input/output error",
        )
    ]
    deadline = time.monotonic() + 2
    while watcher.devices and time.monotonic() < deadline:
        time.sleep(0.005)
    assert watcher.devices == []
    assert fabric.open_contexts() == []


def test_an_exception_in_the_callback_is_reported_and_watching_goes_on(fabric, rec, events):
    calls = []

    def flaky(device, port, old, new):
        calls.append(port)
        if old is not None and len(calls) == 3:
            raise ValueError("consumer bug")
        rec.on_change(device, port, old, new)

    with PortWatcher(flaky, rec.on_error):
        fabric.set_port("mlx5_0", 1, state=1)
        fabric.push_event("mlx5_0", events.IBV_EVENT_PORT_ERR)
        rec.wait(lambda r: r.errors)
        fabric.set_port("mlx5_0", 1, state=4)
        _push_and_time(fabric, rec, "mlx5_0", events.IBV_EVENT_PORT_ACTIVE)
    assert rec.errors == [("mlx5_0", "on_change raised ValueError: consumer bug")]
    assert [(p, new.state) for _, p, _, new in rec.after(2)] == [(1, 4)]


def test_a_device_fatal_event_is_reported(watcher, fabric, rec, events):
    fabric.push_event("mlx5_0", events.IBV_EVENT_DEVICE_FATAL)
    rec.wait(lambda r: r.errors)
    assert rec.errors == [("mlx5_0", "IBV_EVENT_DEVICE_FATAL: the device needs a reset")]


def test_without_an_error_callback_failures_are_logged(fake_pyverbs, rec, caplog):
    fake_pyverbs.add_device("mlx5_0", open_errno=errno.ENODEV)
    fake_pyverbs.add_device("mlx5_1")
    with PortWatcher(rec.on_change):
        pass
    assert "verbs watcher mlx5_0: not watched: Failed to open device mlx5_0" in caplog.text


# -- finding the async event descriptor ------------------------------------------------


def test_it_finds_the_async_event_descriptor_among_new_ones():
    before = {0: "/dev/null", 3: "/dev/pts/0"}
    after = {
        0: "/dev/null",
        3: "/dev/pts/0",
        5: "/dev/infiniband/uverbs0",
        6: "anon_inode:[infinibandevent]",
        7: "anon_inode:[eventpoll]",  # another thread's, opened meanwhile
    }
    assert find_async_fd(before, after, cmd_fd=5) == 6


def test_a_reused_descriptor_number_still_counts_as_new():
    before = {4: "/proc/1234/fd"}  # the descriptor listing /proc/self/fd used
    after = {4: "/dev/infiniband/uverbs0", 5: "anon_inode:[infinibandevent]"}
    assert find_async_fd(before, after, cmd_fd=4) == 5


def test_it_refuses_to_guess_between_candidates():
    after = {5: "/dev/infiniband/uverbs0", 6: "anon_inode:[eventfd]", 7: "socket:[1]"}
    assert find_async_fd({}, after, cmd_fd=5) is None
    two = {5: "/dev/infiniband/uverbs0", 6: "anon_inode:[infinibandevent]", 7: "anon_inode:[infinibandevent]"}
    assert find_async_fd({}, two, cmd_fd=5) is None


# -- the distribution's pyverbs, on this machine ----------------------------------------


def test_the_real_pyverbs_here_has_nothing_to_watch_without_devices(real_pyverbs, rec):
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        pytest.skip("this host has RDMA devices")
    with pytest.raises(WatchUnavailable, match="no devices"):
        PortWatcher(rec.on_change, pyverbs=real_pyverbs).start()


def test_latency_summary(request):
    """Not a check of its own: prints the callback latencies the tests above measured."""
    if not LATENCIES:
        pytest.skip("no latency measured in this run")
    ordered = sorted(LATENCIES)
    summary = (
        f"watcher callback latency over {len(ordered)} events: "
        f"median {ordered[len(ordered) // 2] * 1e3:.2f} ms, max {ordered[-1] * 1e3:.2f} ms"
    )
    request.node.user_properties.append(("latency", summary))
    print(summary)
    assert ordered[-1] < LIMIT_S
