"""Covers fabricweb/scheduling.py, fabricweb/health/tasks.py, fabricweb/pollledger.py.

One staleness: a node is stale after missing polls it was sent, never by the clock alone.

The real dispatch task sends the polls to the test Redis and the real check-stale task judges
them. The node agents and ingest are played at their queues: a node that answers takes its poll
off node.<name>, as the agent's BRPOP does, and pushes a snapshot onto the snapshots queue;
ingest takes the snapshots and stamps their nodes' last_ingested_at (tests/e2e run the real ones).
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from fabricweb import scheduling
from fabricweb.celery import app, node_queue
from fabricweb.health import tasks
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from fabricweb.names import SNAPSHOT_QUEUE
from fabricweb.pollledger import PollLedger

INTERVAL = 0.3  # s: short, so a test of several polls takes about a second


class Polled:
    """Three registered nodes, their queues on the broker, and beat's rounds played one by one."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.client = scheduling.broker_redis(app.conf.broker_url)
        self.silent: set[str] = set()  # agents that do not take their polls
        self.mute: set[str] = set()  # agents that take their polls and send nothing back
        self.ingest_paused = False

    def take(self) -> None:
        """Every node that answers takes the poll waiting in its queue, and sends its snapshot."""
        for name in self.names:
            if name not in self.silent and self.client.delete(node_queue(name)) and name not in self.mute:
                self.client.lpush(SNAPSHOT_QUEUE, name)

    def ingest(self) -> None:
        while not self.ingest_paused and (name := self.client.rpop(SNAPSHOT_QUEUE)):
            Node.objects.filter(name=name.decode()).update(last_ingested_at=timezone.now(), stale=False)

    def round(self) -> dict:
        """One interval: beat dispatches, the nodes take their polls (or not), beat checks staleness."""
        scheduling.dispatch_collect.apply().get()
        self.take()
        self.ingest()
        time.sleep(INTERVAL)
        return tasks.check_stale.apply().get()

    def stale_events(self) -> list[str]:
        return sorted(Event.objects.filter(kind="stale").values_list("node__name", flat=True))

    def own(self, counts: dict[str, int]) -> dict[str, int]:
        """The ledger's counts of this test's nodes: the broker's Redis is shared with other tests' nodes."""
        return {name: n for name, n in counts.items() if name in self.names}

    def stale_nodes(self) -> list[str]:
        return sorted(Node.objects.filter(stale=True).values_list("name", flat=True))


@pytest.fixture
def polled(each_db, settings):
    settings.FABRIC_POLL_INTERVAL = INTERVAL
    names = sorted(f"t{uuid.uuid4().hex[:10]}" for _ in range(3))
    # Their agents said hello (the first snapshot of each) 30 s ago: a hundred intervals by the clock.
    hello = timezone.now() - timedelta(seconds=30)
    Node.objects.bulk_create(Node(name=n, first_seen_at=hello, last_ingested_at=hello) for n in names)
    fabric = Polled(names)
    try:
        yield fabric
    finally:
        queues = [node_queue(n) for n in names]
        fabric.client.delete(SNAPSHOT_QUEUE, *queues, *(f"_kombu.binding.{q}" for q in queues))
        PollLedger(fabric.client).forget(names)


def test_beat_started_30_s_after_the_agents_pages_no_node_stale(polled):
    assert tasks.check_stale.apply().get()["stale"] == []  # before the first dispatch: nothing was sent
    for _ in range(5):
        assert polled.round()["stale"] == []
    assert polled.stale_events() == [] and polled.stale_nodes() == []


def test_ingest_paused_for_three_polls_pages_no_node_stale(polled):
    polled.round()
    polled.ingest_paused = True  # the nodes take their polls and their snapshots wait on the broker
    last = dict(Node.objects.values_list("name", "last_ingested_at"))
    for _ in range(5):
        assert polled.round()["stale"] == []
    assert dict(Node.objects.values_list("name", "last_ingested_at")) == last
    polled.ingest_paused = False
    for _ in range(2):
        assert polled.round()["stale"] == []
    assert polled.stale_events() == []


def test_a_beat_restart_pages_no_node_stale(polled):
    for _ in range(2):
        polled.round()
    time.sleep(10 * INTERVAL)  # beat is down: no poll is sent, so none is missed
    assert tasks.check_stale.apply().get()["stale"] == []  # the restarted beat checks before it dispatches
    for _ in range(3):
        assert polled.round()["stale"] == []
    assert polled.stale_events() == []


def test_a_node_that_does_not_take_its_polls_is_stale_after_missing_three(polled):
    dead = polled.names[1]
    polled.round()
    polled.silent.add(dead)
    # Its first untaken poll is sent at the next dispatch and counted missed one interval later.
    outcomes = [polled.round()["stale"] for _ in range(4)]
    assert outcomes == [[], [], [], [dead]]
    assert polled.stale_nodes() == [dead]
    event = Event.objects.get(kind="stale", resolved_at__isnull=True)
    assert event.message == f"{dead}: no snapshot for 3 polls (~0.9 s): the node or its fabricweb worker is down"
    assert polled.own(scheduling.missed_polls(polled.client)) == {dead: 3}

    polled.silent.clear()
    polled.take()  # its agent is back and takes the poll that waited: answering, whatever the count says
    assert polled.own(scheduling.missed_polls(polled.client)) == {}
    assert polled.round()["stale"] == []
    assert polled.own(PollLedger(polled.client).missed()) == {}
    assert polled.own(PollLedger(polled.client).missed_total()) == {dead: 3}


def test_dispatches_run_back_to_back_count_no_miss(polled, settings):
    # The central side stalled, then ran two dispatches at once: the second found the first's polls
    # still queued, but they had not waited an interval. A longer interval than the other tests': one
    # dispatch alone took 0.26 s, most of 0.3 s, on a machine shared with the other test workers.
    settings.FABRIC_POLL_INTERVAL = interval = 1.5
    scheduling.dispatch_collect.apply().get()
    assert scheduling.dispatch_collect.apply().get() == {"sent": 0, "waiting": 3}
    assert polled.own(PollLedger(polled.client).missed()) == {}
    time.sleep(interval)
    scheduling.dispatch_collect.apply().get()
    assert polled.own(PollLedger(polled.client).missed()) == dict.fromkeys(polled.names, 1)


def test_a_node_that_takes_its_polls_and_sends_nothing_back_is_stale(polled):
    # Its reads never finish inside the poll's deadline, or its snapshots are refused: it takes every poll.
    mute = polled.names[2]
    polled.round()
    polled.mute.add(mute)
    # Two polls out unanswered are the lag allowed; three more make it stale.
    outcomes = [polled.round()["stale"] for _ in range(5)]
    assert outcomes == [[], [], [], [], [mute]]
    assert polled.stale_nodes() == [mute] and polled.own(PollLedger(polled.client).missed()) == {}
    polled.mute.clear()
    assert polled.round()["stale"] == [] and polled.stale_nodes() == []
