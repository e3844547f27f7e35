"""Covers fabricweb/agent/config.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/intake/readers.py,
fabricweb/telemetry/intake/redisread.py, fabricweb/telemetry/intake/shards.py,
fabricweb/telemetry/management/commands/ingest.py.

Several ingest consumers: snapshots routed by node to K queues, leases shared out, a dead consumer's taken over.

Leases are tested against the real test Redis (a leased database), with short leases; the
takeover end to end with two `manage.py ingest` processes on PostgreSQL, one of them killed.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest
import redis

from fabricweb.agent.config import AgentConfig
from fabricweb.celery import app
from fabricweb.names import INGEST_SNAPSHOT, SNAPSHOT_QUEUE, shard_queue, snapshot_queue, snapshot_shard
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.intake.readers import transport_options
from fabricweb.telemetry.intake.redisread import TAKERS_KEY, BatchReader, taken_count
from fabricweb.telemetry.intake.shards import CONSUMERS_KEY, ShardCountMismatch, ShardLeases, unacked_keys
from tests.e2e.e2e_harness import SECRET, Process, clean_env
from tests.fixture_trees import later, snapshot
from tests.pipeline.pipeline_support import needs_postgres, on_the_wire, postgres_only, stored

PORTS = 4


def test_a_nodes_queue_is_a_stable_hash_of_its_name_and_one_shard_keeps_the_old_queue():
    assert snapshot_queue("cn001") == snapshot_queue("cn001", 1) == SNAPSHOT_QUEUE == "snapshots"
    # CRC-32: the same in every process and Python, not hash()'s per-process seed.
    assert snapshot_shard("cn001", 4) == zlib.crc32(b"cn001") % 4 == 1
    assert snapshot_queue("cn001", 4) == shard_queue(1) == "snapshots.1"
    spread = Counter(snapshot_shard(f"cn{n:05d}", 4) for n in range(4000))
    assert sorted(spread) == [0, 1, 2, 3] and min(spread.values()) > 900


def test_the_agent_reads_the_number_of_shards_from_its_environment():
    config = AgentConfig.from_env({"FABRIC_NODE_NAME": "cn001", "FABRIC_INGEST_SHARDS": "4"})
    assert config.ingest_shards == 4
    assert AgentConfig.from_env({"FABRIC_NODE_NAME": "cn001"}).ingest_shards == 1
    with pytest.raises(ValueError, match="FABRIC_INGEST_SHARDS='0': must be at least 1"):
        AgentConfig.from_env({"FABRIC_NODE_NAME": "cn001", "FABRIC_INGEST_SHARDS": "0"})


@pytest.fixture
def client(broker) -> redis.Redis:
    return broker.redis


def leases(client, name: str, shards: int = 4, lease_s: float = 5.0, apart: bool = False) -> ShardLeases:
    return ShardLeases(client, shards, lease_s, consumer_id=name, sweeps_apart=apart)


def test_a_lone_consumer_holds_every_queue_and_a_second_one_gets_half(client):
    a, b = leases(client, "a"), leases(client, "b")
    assert a.beat() == (0, 1, 2, 3)
    assert a.queues() == ["snapshots", "snapshots.0", "snapshots.1", "snapshots.2", "snapshots.3", "sweeps"]
    assert b.beat() == ()  # nothing free yet: a gives up its extra share at its next beat
    assert a.beat() == (0, 1, 2, 3) and a.over_share  # ... once it has stored what it holds
    assert a.give_up() == (0, 1)
    assert b.beat() == (2, 3)
    assert b.queues() == ["snapshots.2", "snapshots.3"]  # the unsharded queue and the sweeps go with shard 0
    assert (a.beat(), b.beat()) == ((0, 1), (2, 3))  # stable once shared


def test_three_consumers_share_four_queues_two_one_one(client):
    members = [leases(client, name) for name in "abc"]
    for _ in range(4):
        for member in members:
            member.beat()
            if member.over_share:
                member.give_up()
    held = [m.held for m in members]
    assert sorted(len(h) for h in held) == [1, 1, 2]
    assert sorted(k for h in held for k in h) == [0, 1, 2, 3]


def test_apart_a_lone_consumer_reads_the_sweeps_too_and_a_second_one_takes_the_hosts(client):
    a, b = leases(client, "a", shards=2, apart=True), leases(client, "b", shards=2, apart=True)
    assert a.beat() == (0, 1, 2)  # 2: the sweeps' own lease
    assert a.queues() == ["snapshots", "snapshots.0", "snapshots.1", "sweeps"]
    assert b.beat() == ()
    assert a.beat() == (0, 1, 2) and a.over_share  # the sweeps' holder stores nothing else beside others
    assert a.give_up() == (2,)
    assert b.beat() == (0, 1)
    assert (a.queues(), b.queues()) == (["sweeps"], ["snapshots", "snapshots.0", "snapshots.1"])
    assert (a.beat(), b.beat()) == ((2,), (0, 1))  # stable once shared


def test_apart_three_consumers_share_the_hosts_between_two_and_the_third_stores_the_sweeps(client):
    members = [leases(client, name, apart=True) for name in "abc"]
    for _ in range(4):
        for member in members:
            member.beat()
            if member.over_share:
                member.give_up()
    queues = sorted(m.queues() for m in members)
    assert queues[-1] == ["sweeps"]
    assert sorted(len(q) for q in queues[:2]) == [2, 3]  # two snapshot queues each, one with the unsharded one
    assert sorted(k for m in members for k in m.held) == [0, 1, 2, 3, 4]


def test_apart_the_sweeps_of_a_consumer_that_stopped_go_to_the_one_holding_fewest_queues(client):
    a, b, c = (leases(client, name, apart=True) for name in "abc")
    for _ in range(3):
        for member in (a, b, c):
            member.beat()
            if member.over_share:
                member.give_up()
    sweeper = next(m for m in (a, b, c) if m.queues() == ["sweeps"])
    sweeper.leave()
    rest = [m for m in (a, b, c) if m is not sweeper]
    for _ in range(3):
        for member in rest:
            member.beat()
            if member.over_share:
                member.give_up()
    # Both held two snapshot queues: the lower id takes the sweeps and gives its queues to the other.
    first, second = sorted(rest, key=lambda m: m.id)
    assert (first.held, second.held) == ((4,), (0, 1, 2, 3))
    assert first.queues() == ["sweeps"]


def test_consumers_that_read_the_sweeps_apart_and_with_queue_0_refuse_to_run_together(client):
    older = leases(client, "a", shards=2)
    older.beat()
    with pytest.raises(ShardCountMismatch, match="read the fabric collectors' sweeps with snapshot queue 0"):
        leases(client, "b", shards=2, apart=True).beat()
    older.leave()
    leases(client, "a", shards=2, apart=True).beat()
    with pytest.raises(ShardCountMismatch, match=r"sweeps apart \(FABRIC_COLLECTORS set\), this one does not"):
        leases(client, "b", shards=2).beat()


def test_a_consumer_started_with_another_number_of_shards_refuses_to_run(client):
    leases(client, "a", shards=4).beat()
    with pytest.raises(ShardCountMismatch, match="live ingest consumers run with 4 shards, this one with 2"):
        leases(client, "b", shards=2).beat()


# Consumer a's heartbeat: long enough to stay alive through a loaded machine's few steps between its
# last beat and b's first look, short enough to wait out.
A_LEASE_S = 1.0


def send(conn, snap: dict, shards: int) -> None:
    app.send_task(
        INGEST_SNAPSHOT, args=[on_the_wire(snap)], queue=snapshot_queue(snap["host"], shards), connection=conn
    )


def test_a_dead_consumers_unacked_polls_go_back_first_then_its_queues_are_taken_over(broker, client):
    a, b = leases(client, "a", lease_s=A_LEASE_S), leases(client, "b", lease_s=5.0)
    assert a.beat() == (0, 1, 2, 3)
    host = "cn001"  # shard 1 of 4
    first = snapshot(host=host)
    queue = shard_queue(1)
    for k in range(3):
        send(broker.conn, later(first, 10 * k), 4)
    # Consumer a takes the three polls and dies holding them (SIGKILL: nothing restored at shutdown).
    taken = []
    with app.connection_for_read(broker.url, transport_options=transport_options(60, "a")) as conn:
        channel = conn.default_channel
        with conn.Consumer(app.amqp.queues[queue], channel=channel, on_message=taken.append, prefetch_count=10):
            while len(taken) < 3:
                conn.drain_events(timeout=2)
        channel.qos.restore_at_shutdown = False
    assert client.hlen(unacked_keys("a")["unacked_key"]) == 3 and client.llen(queue) == 0
    for k in range(3, 5):  # the polls after, sent while a is dead
        send(broker.conn, later(first, 10 * k), 4)

    assert a.beat() == (0, 1, 2, 3)  # its last heartbeat: it dies holding the three polls
    assert b.beat() == ()  # a is still alive for b: its heartbeat has not run out
    time.sleep(A_LEASE_S + 0.1)
    assert b.beat() == (0, 1, 2, 3)
    assert client.zscore(CONSUMERS_KEY, "a") is None
    assert not client.exists(*unacked_keys("a").values())
    # Read as the consumer reads (BRPOP from the right): a's three first, oldest first, then the two after.
    read = []
    while (raw := client.rpop(queue)) is not None:
        read.append(json.loads(raw))
    times = [json.loads(m["body"])[0][0]["collected_at"] for m in read]
    assert times == [later(first, 10 * k)["collected_at"] for k in range(5)]
    assert [m["headers"].get("redelivered", False) for m in read] == [True, True, True, False, False]


def test_a_dead_consumers_taken_polls_go_back_first_then_its_queues_are_taken_over(broker, client):
    a, b = leases(client, "a", lease_s=A_LEASE_S), leases(client, "b", lease_s=5.0)
    assert a.beat() == (0, 1, 2, 3)
    first, queue = snapshot(host="cn001"), shard_queue(1)
    for k in range(3):
        send(broker.conn, later(first, 10 * k), 4)
    # a's reader (plain redis://: messages moved to lists of its own) takes the three, and a dies.
    assert len(BatchReader(client, transport_options(60, "a"), "a#1").take(a.queues(), 10)) == 3
    send(broker.conn, later(first, 30), 4)
    time.sleep(A_LEASE_S + 0.1)
    assert b.beat() == (0, 1, 2, 3)
    assert taken_count(client) == 0 and client.zscore(TAKERS_KEY, "a#1") is None
    read = [json.loads(raw) for raw in iter(lambda: client.rpop(queue), None)]
    times = [json.loads(m["body"])[0][0]["collected_at"] for m in read]
    assert times == [later(first, 10 * k)["collected_at"] for k in range(4)]
    assert [m["headers"].get("redelivered", False) for m in read] == [True, True, True, False]


def test_a_consumer_that_stops_gives_its_queues_up_at_once(client):
    a, b = leases(client, "a"), leases(client, "b")
    a.beat(), b.beat(), a.beat(), a.give_up(), b.beat()
    assert (a.held, b.held) == ((0, 1), (2, 3))
    a.leave()
    assert b.beat() == (0, 1, 2, 3)


def manage_ingest(tmp: Path, name: str, db_url: str, broker, *options: str) -> Process:
    env = clean_env(
        DATABASE_URL=db_url, SECRET_KEY=SECRET, REDIS_URL=broker.url, LOG_LEVEL="INFO", FABRIC_INGEST_SHARDS="2"
    )
    return Process([sys.executable, "manage.py", "ingest", *options], env, tmp / f"{name}.log")


@needs_postgres
@postgres_only
def test_two_consumers_store_every_poll_once_and_one_killed_has_its_share_taken_over(postgres, broker, tmp_path):
    hosts = [f"cn{n:03d}" for n in range(1, 9)]
    assert {snapshot_shard(h, 2) for h in hosts} == {0, 1}
    firsts = [snapshot(host=h) for h in hosts]
    for s in firsts:
        send(broker.conn, s, 2)
    # a holds its batches up to 60 s: killed, it has acked nothing it took since its last batch.
    # Heartbeats of 3 s: a loaded machine can starve a consumer's beat for a second, and a lapsed lease
    # hands its queues to the other mid-test.
    a = manage_ingest(tmp_path, "a", postgres, broker, "--lease", "3", "--max-wait", "60", "--redeliver-after", "120")
    b = None
    queued = lambda: broker.redis.llen(shard_queue(0)) + broker.redis.llen(shard_queue(1))  # noqa: E731
    try:
        a.wait_for("a holding all 8 first polls", lambda: queued() == 0)
        b = manage_ingest(tmp_path, "b", postgres, broker, "--lease", "3", "--max-wait", "0.1")
        # a stores what it holds before it gives a queue up to b.
        b.wait_for("b holding one of the two queues", lambda: "holds snapshots.1" in b.tail())
        assert stored() == {h: PORTS for h in hosts}
        for k in (1, 2):
            for s in firsts:
                send(broker.conn, later(s, 10 * k), 2)
        on_b = sum(snapshot_shard(h, 2) == 1 for h in hosts)
        b.wait_for("b's polls stored, a holding its", lambda: len(list(samples.between())) == (8 + 2 * on_b) * PORTS)
        b.wait_for("nothing left queued", lambda: queued() == 0)
        assert a.stop(signal.SIGKILL) == -signal.SIGKILL
        killed_at = time.monotonic()
        b.wait_for("every poll stored", lambda: len(list(samples.between())) == 3 * 8 * PORTS)
        took = time.monotonic() - killed_at
        assert "holds snapshots, snapshots.0, snapshots.1" in b.tail()
        assert b.stop(signal.SIGTERM, timeout=10) == 0, b.tail()
    finally:
        a.kill_all()
        if b is not None:
            b.kill_all()
    assert took < 10
    # Each poll exactly once, none stale (a's were put back ahead of the later ones): no gap.
    assert stored() == {h: 3 * PORTS for h in hosts}
    assert not [s for s in samples.between() if (s.interval_s or 0) > 10.5]
    assert broker.redis.llen(shard_queue(0)) == broker.redis.llen(shard_queue(1)) == 0
