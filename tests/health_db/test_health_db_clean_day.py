"""Covers fabricweb/telemetry/history/samples.py.

A healthy day, accelerated: 8640 simulated 10-s polls through ingest and health, and not one alarm.

The fabric is two nodes, a ConnectX-6 (two HCAs) and a ConnectX-3 whose 32-bit data
counters stop at all-ones within seconds. The day has reboots (counter resets, the
node silent for two polls), counters reset by hand, and isolated missed polls.

Its snapshots are made once (the simulator and the sysfs reader cost more than
ingest) and ingested on each database in 5-minute batches (one ingest_batch call each, as the
consumer stores a backlog): each snapshot is still judged
on its own, in time order. Measured on the development VM: making the day ~30 s
(once), ingesting it ~15 s on SQLite and ~18 s on PostgreSQL; four nodes took twice that.
"""

from __future__ import annotations

import gzip

import orjson
import pytest

from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_batch
from tests.health_db.health_db_fabric import SimFabric

POLLS = 8640  # a day at 10 s
BATCH = 30  # polls per ingest_batch: five minutes
REBOOTS = {"cn002": (1500, 7000), "cn001": (4000,)}  # counters back to zero, node silent for two polls
HAND_RESETS = {"cn002": (3000, 5500)}  # perfquery -R: counters zeroed, node reporting all along
MISSED = {"cn001": (2000, 6000, 8000), "cn002": (2500,)}  # one snapshot lost in transit


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """The day's snapshots as gzipped JSON lines, one line per poll (the snapshots that arrived)."""
    path = tmp_path_factory.mktemp("clean-day") / "day.jsonl.gz"
    fab = SimFabric(str(tmp_path_factory.mktemp("clean-day-sim")), 2)
    assert fab.kinds == {"cn001": "cx6", "cn002": "cx3"}
    with gzip.open(path, "wb", compresslevel=1) as out:
        for i in range(POLLS):
            for node in fab.nodes:
                if i in REBOOTS.get(node, ()) or i in HAND_RESETS.get(node, ()):
                    fab.fault(f"{node}:reset")
            fab.sim.step(10.0)
            down = {n for n, at in REBOOTS.items() for a in at if a <= i < a + 2}
            lost = {n for n, at in MISSED.items() if i in at}
            snaps = [fab.snapshot(n) for n in fab.nodes if n not in down | lost]
            out.write(orjson.dumps([fab.now.isoformat(), snaps]) + b"\n")  # orjson: the day is 80 MB of JSON
            for node in fab.nodes:
                if f"{node}:reset" in fab.sim.faults():
                    fab.clear(f"{node}:reset")
    return path


def batches(path):
    from datetime import datetime

    pending: list = []
    with gzip.open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            now, snaps = orjson.loads(line)
            pending += snaps
            if n % BATCH == 0 or n == POLLS:
                yield datetime.fromisoformat(now), pending
                pending = []


def test_a_day_with_reboots_capped_counters_and_missed_polls_raises_no_alarm(each_db, day, outcomes):
    for now, snaps in batches(day):
        batch = ingest_batch(snaps, now=now)
        assert not batch.rejected
    alarms = [alarm for outcome in outcomes for alarm in outcome.alarms]
    judged = sum(outcome.snapshots for outcome in outcomes)
    assert alarms == []
    assert not Event.objects.exclude(severity=Event.Severity.INFO).exists()
    # Every snapshot that arrived was judged: six were lost to reboots, four in transit.
    assert judged == 2 * POLLS - 2 * 3 - 4
    # The day did happen: resets were seen, and the old HCA's 32-bit counters stopped at all-ones (their
    # 64-bit copies were read instead, so not even an info event about them).
    for name in ("cn001", "cn002"):
        assert any(s.reset for s in samples.between(nodes=Node.objects.filter(name=name)))
    assert all("port_xmit_data" in p.capped for p in Port.objects.filter(device__node__name="cn002"))
    assert not Event.objects.exists()
