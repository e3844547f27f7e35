"""Covers fabricweb/health/rules/findings.py, fabricweb/health/records/lifecycle.py, fabricweb/health/rules/; through
them fabricweb/health/rules/common.py, fabricweb/health/rules/counters.py, fabricweb/health/rules/link.py,
fabricweb/health/rules/node.py, fabricweb/health/rules/pcie.py, fabricweb/health/rules/port.py.

A day of a healthy port on an old HCA must not raise a single warning or critical finding."""

from __future__ import annotations

import random
from collections import deque

from fabricweb.health.records.lifecycle import Op, OpenEvent, step
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.findings import Severity
from tests.health.health_factory import NOW, ZERO, port_view

POLLS = 8640  # a day at 10 s
# 32-bit data counters of an old PMA stop at all-ones within seconds at 100 Gb/s.
CAPPED = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"})


def test_a_clean_day_with_resets_capped_counters_and_a_missed_poll_raises_no_alarm():
    rng = random.Random(42)
    recent: deque = deque(maxlen=359)
    open_events: dict[str, OpenEvent] = {}
    alarms, opened = [], []
    reset_polls = {1000, 5000, 5001}  # perfquery -R, a driver reload
    missed_poll = 3000
    ts = NOW
    interval = 10.0
    for i in range(POLLS):
        if i == missed_poll:
            interval += 10.0  # no snapshot this poll: the next one spans 20 s
            continue
        ts += interval
        deltas = dict(ZERO)
        deltas["port_xmit_wait"] = rng.randrange(0, 50_000_000)  # up to 0.3% of 10 s of 4X EDR at 8 bytes a count
        if rng.random() < 0.005:
            deltas["symbol_error"] = 1  # a BER well inside 1e-12
        if i in reset_polls:
            deltas = dict.fromkeys(deltas)
        deltas.update(dict.fromkeys(CAPPED))
        view = port_view(ts=ts, interval_s=interval, deltas=deltas, capped=CAPPED, recent=tuple(recent))
        judgement = judge_port(view)
        alarms += [f for f in judgement.findings if f.severity is not Severity.INFO]
        for a in step(open_events, judgement.findings, unknown=judgement.unknown):
            if a.op is Op.OPEN:
                opened.append(a.key)
            if a.op is Op.RESOLVE:
                del open_events[a.key]
            else:
                open_events[a.key] = OpenEvent(a.key, a.kind, a.severity, a.message, a.clean_polls, a.details)
        # Ingest keeps the error deltas of the last hour; zeros may be left out.
        recent.append((ts, interval, {k: v for k, v in deltas.items() if v != 0 and k not in CAPPED}))
        interval = 10.0
    assert alarms == []
    # The capped counters are on record once, as info, for the whole day.
    assert opened == ["capped_counters:cn042/mlx5_0/1"]
