"""Covers collectors/mads/mad.py, collectors/mads/engine.py.

The MAD engine: many queries in flight, replies matched by TID, timeouts retried, a silent target cut short.

A scripted port stands in for libibumad here (the engine's only I/O is its send and recv); the real
port and the real fabric are tested against ibsim (test_fabric_ibsim.py).
"""

from __future__ import annotations

import time

from collectors.mads import mad
from collectors.mads.engine import TIMEOUT_STATUS, Engine, Query


class ScriptedPort:
    """Answers each query after `delay` seconds unless its target LID is `silent`; `status` per LID."""

    def __init__(self, silent: set[int] = frozenset(), delay: float = 0.0, kernel_timeouts: bool = False) -> None:
        self.silent = silent
        self.delay = delay
        self.kernel_timeouts = kernel_timeouts
        self.inflight: list[tuple[float, bytes, int]] = []
        self.sent: list[tuple[int, int]] = []  # (lid, tid)
        self.most_in_flight = 0

    def send(self, mgmt_class, mad_bytes, lid, qp, qkey, timeout_ms):
        tid = int.from_bytes(mad_bytes[8:16])
        self.sent.append((lid, tid))
        if lid in self.silent:
            if self.kernel_timeouts:  # the kernel gives up on it and says so with the request itself
                self.inflight.append((time.monotonic() + timeout_ms / 1000, mad_bytes, TIMEOUT_STATUS))
            return
        reply = bytearray(mad_bytes)
        reply[3] = mad.METHOD_GET_RESPONSE
        reply[8:12] = (7).to_bytes(4)  # the kernel's half of the TID
        self.inflight.append((time.monotonic() + self.delay, bytes(reply), 0))
        self.most_in_flight = max(self.most_in_flight, len(self.inflight))

    def recv(self, timeout_ms):
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            ready = [item for item in self.inflight if item[0] <= time.monotonic()]
            if ready:
                self.inflight.remove(ready[0])
                return ready[0][1], ready[0][2]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.0005)


def query(lid: int, outcomes: list, group=None) -> Query:
    def build(tid: int) -> bytes:
        return mad.pma_get(tid, mad.ATTR_PORT_COUNTERS, 1)

    return Query(mad.CLASS_PERFORMANCE, build, lid, 1, mad.GSI_QKEY, lambda r, e: outcomes.append((lid, r, e)),
                 f"PortCounters of lid {lid}", group)  # fmt: skip


def test_it_keeps_a_window_of_queries_in_flight_and_answers_each():
    port, outcomes = ScriptedPort(delay=0.002), []
    engine = Engine(port, window=16, timeout_ms=500)
    for lid in range(1, 201):
        engine.submit(query(lid, outcomes))
    engine.run()
    assert sorted(lid for lid, reply, error in outcomes if reply is not None) == list(range(1, 201))
    assert port.most_in_flight == 16
    assert engine.stats.sent == 200 and engine.stats.answered == 200 and engine.stats.failed == 0


def test_it_retries_an_unanswered_query_then_says_why_it_failed():
    port, outcomes = ScriptedPort(silent={9}), []
    engine = Engine(port, window=4, timeout_ms=20, retries=2)
    engine.submit(query(9, outcomes))
    engine.submit(query(3, outcomes))
    engine.run()
    assert [(lid, error) for lid, _, error in outcomes] == [(3, None), (9, "no answer (timeout) after 3 tries")]
    assert [lid for lid, _ in port.sent].count(9) == 3
    tids = [tid for lid, tid in port.sent if lid == 9]
    assert len(set(tids)) == 3  # each try a TID of its own: a late reply to an old one cannot be mistaken


def test_the_kernels_timeout_status_is_a_timeout_too():
    port, outcomes = ScriptedPort(silent={9}, kernel_timeouts=True), []
    engine = Engine(port, window=4, timeout_ms=20, retries=1)
    engine.submit(query(9, outcomes))
    engine.run()
    assert outcomes == [(9, None, "no answer (timeout) after 2 tries")]


def test_a_silent_target_costs_one_query_its_timeouts_not_every_query():
    port, outcomes = ScriptedPort(silent={9}), []
    engine = Engine(port, window=2, timeout_ms=30, retries=1)
    for _ in range(40):
        engine.submit(query(9, outcomes, group="switch 9"))
    started = time.monotonic()
    engine.run()
    # 40 queries x 2 tries x 30 ms would be 2.4 s; it takes under 0.1 s, with room for a descheduled worker.
    assert time.monotonic() - started < 1.2
    assert len(outcomes) == 40 and all(reply is None for _, reply, _ in outcomes)
    not_sent = [e for _, _, e in outcomes if e.startswith("not sent")]
    assert len(not_sent) >= 37
    assert not_sent[0] == "not sent: PortCounters of lid 9: no answer (timeout) after 2 tries"


def test_a_reply_to_a_query_already_given_up_is_ignored():
    port, outcomes = ScriptedPort(delay=0.05), []
    engine = Engine(port, window=4, timeout_ms=10, retries=0)
    engine.submit(query(5, outcomes))
    engine.run()
    time.sleep(0.06)
    engine.submit(query(6, outcomes))
    engine.run()  # the late reply to lid 5's query arrives now: nobody waits for it
    once = "no answer (timeout) after 1 try"
    assert [(lid, error) for lid, _, error in outcomes] == [(5, once), (6, once)]


def test_past_its_deadline_a_run_fails_what_is_left_and_returns():
    port, outcomes = ScriptedPort(silent={1, 2, 3}), []
    engine = Engine(port, window=2, timeout_ms=1000, retries=5)
    for lid in (1, 2, 3):
        engine.submit(query(lid, outcomes))
    started = time.monotonic()
    engine.run(deadline=time.monotonic() + 0.1)
    assert time.monotonic() - started < 1.0  # without the deadline: 6 tries of 1 s for each silent switch
    assert sorted(e for _, _, e in outcomes) == ["sweep deadline passed"] * 3
