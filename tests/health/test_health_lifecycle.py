"""Covers fabricweb/health/rules/findings.py, fabricweb/health/records/lifecycle.py, fabricweb/health/rules/.

Events from findings: open, update, hysteresis, one event per flapping episode."""

from __future__ import annotations

from fabricweb.health.records.lifecycle import Op, OpenEvent, step
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.findings import Finding, Kind, Severity
from tests.health.health_factory import NOW, port_view

KEY = "down:cn042/mlx5_0/1"
DOWN = Finding(Kind.DOWN, Severity.CRITICAL, KEY, "cn042 mlx5_0/1: port down (DOWN, physical state Polling: ...)")


class Store:
    """A minimal event table driven by lifecycle actions, as the Django side would keep it."""

    def __init__(self):
        self.open: dict[str, OpenEvent] = {}
        self.opened: list[str] = []
        self.resolved: list[str] = []

    def poll(self, findings, unknown=frozenset(), resolve_after=3):
        actions = step(self.open, findings, unknown=unknown, resolve_after=resolve_after)
        for a in actions:
            if a.op is Op.OPEN:
                self.opened.append(a.key)
            if a.op is Op.RESOLVE:
                self.resolved.append(a.key)
                del self.open[a.key]
            else:
                self.open[a.key] = OpenEvent(a.key, a.kind, a.severity, a.message, a.clean_polls, a.details)
        return actions


def test_a_new_finding_opens_an_event_with_its_severity_and_reason():
    [action] = step({}, [DOWN])
    assert (action.op, action.key, action.severity, action.reason) == (Op.OPEN, KEY, Severity.CRITICAL, DOWN.message)
    assert action.clean_polls == 0


def test_an_unchanged_finding_needs_no_write():
    event = OpenEvent(KEY, "down", "critical", DOWN.message)
    assert step([event], [DOWN]) == []


def test_a_changed_message_updates_the_open_event():
    event = OpenEvent(KEY, "degraded", "critical", "cn042 mlx5_0/1: trained at 40 Gb/s (4X QDR), ...")
    new = Finding(Kind.DEGRADED, Severity.CRITICAL, KEY, "cn042 mlx5_0/1: trained at 25 Gb/s (1X EDR), ...")
    [action] = step([event], [new])
    assert (action.op, action.message, action.previous_severity) == (Op.UPDATE, new.message, None)


def test_a_rising_severity_is_an_escalation():
    event = OpenEvent(KEY, "flapping", "info", "bounced once")
    [action] = step([event], [Finding(Kind.FLAPPING, Severity.CRITICAL, KEY, "flapping")])
    assert action.escalated and action.previous_severity is Severity.INFO


def test_it_resolves_after_three_clean_polls_not_before():
    store = Store()
    store.poll([DOWN])
    ops = [store.poll([])[0].op for _ in range(3)]
    assert ops == [Op.QUIET, Op.QUIET, Op.RESOLVE]
    assert store.resolved == [KEY]
    assert step([OpenEvent(KEY, "down", "critical", "x", clean_polls=2)], [])[0].reason == "clear for 3 polls"


def test_the_number_of_clean_polls_is_configurable():
    store = Store()
    store.poll([DOWN])
    assert store.poll([], resolve_after=1)[0].op is Op.RESOLVE


def test_a_finding_back_before_k_clean_polls_resets_the_count_without_reopening():
    store = Store()
    store.poll([DOWN])
    store.poll([])
    store.poll([])
    [action] = store.poll([DOWN])
    assert (action.op, action.clean_polls) == (Op.UPDATE, 0)
    assert store.opened == [KEY]


def test_an_unknown_poll_is_neither_clean_nor_dirty():
    store = Store()
    store.poll([DOWN])
    store.poll([])
    assert store.poll([], unknown={KEY}) == []
    assert store.open[KEY].clean_polls == 1


def test_a_flapping_link_is_one_event_for_the_whole_episode():
    """Down every fourth poll for an hour, then quiet for a while."""
    store = Store()
    polls = []
    flapping_open = []
    for i in range(360 + 400):
        down_now = i < 360 and i % 4 == 0
        view = _flap_poll(polls, i, down_now)
        store.poll(judge_port(view).findings)
        flapping_open.append("flapping:cn042/mlx5_0/1" in store.open)
    # The first down is an honest event of its own, resolved when the link stayed up for 3 polls;
    # from the second down on, one flapping event carries the episode, however often the link drops.
    assert store.opened == ["down:cn042/mlx5_0/1", "flapping:cn042/mlx5_0/1"]
    assert store.resolved == ["down:cn042/mlx5_0/1", "flapping:cn042/mlx5_0/1"]
    first, last = flapping_open.index(True), len(flapping_open) - 1 - flapping_open[::-1].index(True)
    assert all(flapping_open[first : last + 1])
    assert first == 1  # the first bounce is on record at once (as info)
    # Open until the link has been quiet for flapping_quiet_s (15 min: the last down, at poll 356, is within
    # it for 89 more polls), then 2 clean polls; the 3rd resolves. The hour still counts its downs.
    assert last == 356 + 89 + 2


FLAP_KEY = "flapping:cn042/mlx5_0/1"


def test_it_resolves_a_ports_down_event_once_its_flapping_event_carries_the_fault_on():
    store = Store()
    store.poll([DOWN])
    flapping = Finding(Kind.FLAPPING, Severity.CRITICAL, FLAP_KEY, "cn042 mlx5_0/1: link flapping, down now: ...")
    actions = {a.key: a for a in store.poll([flapping], unknown={KEY})}  # down now: told by the flapping finding
    assert actions[KEY].op is Op.RESOLVE
    assert actions[KEY].reason == f"carried on by its flapping event: {flapping.message}"
    assert actions[FLAP_KEY].op is Op.OPEN
    assert list(store.open) == [FLAP_KEY]
    # A down finding beside it opens nothing: the flapping event carries the fault.
    assert [a.key for a in store.poll([DOWN, flapping])] == []


def test_it_keeps_a_ports_down_event_beside_one_bounce_of_advice():
    store = Store()
    store.poll([DOWN])
    bounce = Finding(Kind.FLAPPING, Severity.INFO, FLAP_KEY, "cn042 mlx5_0/1: link went down and came back once")
    store.poll([bounce, DOWN])
    assert set(store.open) == {KEY, FLAP_KEY} and store.resolved == []


def test_it_opens_one_event_at_a_time_for_a_link_down_at_every_other_poll():
    """The simulator's flap (the demo's): down at every other poll, never 3 clean polls for the DOWN event."""
    store = Store()
    polls, problems_open = [], []
    for i in range(40):
        down_now = i % 2 == 1
        view = _flap_poll(polls, i, down_now)
        judgement = judge_port(view)
        store.poll(judgement.findings, unknown=judgement.unknown)
        problems_open.append(sorted(k for k, e in store.open.items() if e.severity != Severity.INFO))
    assert store.opened == [KEY, FLAP_KEY]  # the first drop is a down; from the second on, one flapping event
    assert all(len(open_now) <= 1 for open_now in problems_open), problems_open
    assert problems_open[-1] == [FLAP_KEY] and store.resolved == [KEY]


def test_events_of_kinds_not_judged_are_left_alone_when_not_passed():
    # Lifecycle only touches what it is given: a node-level check passes the node's events only.
    assert step([], []) == []


def test_an_unknown_stored_severity_does_not_stop_the_poll():
    [action] = step([OpenEvent(KEY, "down", "bogus", "x")], [])
    assert action.op is Op.QUIET


def _flap_poll(polls: list, i: int, down_now: bool):
    """Poll i (10 s apart) of a port whose link is down now or up, its ring the polls before (appended to)."""
    deltas = {"link_downed": 1 if down_now else 0}  # link_downed counts each time it went down
    ts = NOW + 10 * i
    view = port_view(
        ts=ts,
        state_id=1 if down_now else 4,
        phys_state_id=2 if down_now else 5,
        deltas=deltas,
        recent=tuple(polls[-359:]),
    )
    polls.append((ts, 10.0, deltas))
    return view
