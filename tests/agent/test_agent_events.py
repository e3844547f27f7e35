"""Covers fabricweb/agent/config.py, fabricweb/agent/tasks.py; through them fabricweb/agent/events.py.

Port events (fake pyverbs) make the agent send a snapshot at once, and a flapping link at most one a second.

The snapshots go to the `snapshots` queue of a leased test Redis database by the agent's own publisher and
Redis client, as it sends them; the fake pyverbs stands in for the HCA.
"""

from __future__ import annotations

import importlib
import json
import time
from datetime import datetime
from itertools import pairwise

import pytest
import redis

from collectors.sim import Fabric
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.loop import connection
from fabricweb.agent.publish import Publisher
from fabricweb.agent.tasks import Agent
from fabricweb.names import SNAPSHOT_QUEUE
from tests.e2e.e2e_harness import leased_redis_db

LIMIT_S = 1.0  # DESIGN.md: a port that goes down is known in under a second


@pytest.fixture
def broker():
    with leased_redis_db() as url:
        yield url, redis.Redis.from_url(url)


@pytest.fixture
def events(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0", ports=2)
    return importlib.import_module("pyverbs.enums").ibv_event_type


@pytest.fixture
def agent(broker, events, tmp_path):
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    config = AgentConfig(broker_url=broker[0], node_name="cn001", sysfs_root=str(tmp_path / "cn001"), watch="on")
    agent = Agent(config, Publisher(connection(config)))
    assert agent.watch_events()
    yield agent
    agent.stop()


def snapshots(client: redis.Redis, timeout: float) -> list[tuple[float, dict]]:
    """Every snapshot that arrives within `timeout`, with when it arrived."""
    got, deadline = [], time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        popped = client.brpop([SNAPSHOT_QUEUE], timeout=max(left, 0.01))
        if popped:
            got.append((time.monotonic(), json.loads(popped[1])))
    return got


def snapshot_args(message: dict) -> dict:
    args, _kwargs, _embed = json.loads(message["body"])
    return args[0]


def read_time(message: dict) -> float:
    return datetime.fromisoformat(snapshot_args(message)["collected_at"]).timestamp()


def test_a_port_that_goes_down_sends_a_snapshot_at_once(agent, broker, fake_pyverbs, events):
    _, client = broker
    assert snapshots(client, 0.3) == []  # the watcher's first look at each port is its baseline
    fake_pyverbs.set_port("mlx5_0", 1, state=1, phys_state=2)
    t0 = time.monotonic()
    fake_pyverbs.push_event("mlx5_0", events.IBV_EVENT_PORT_ERR)
    popped = client.brpop([SNAPSHOT_QUEUE], timeout=5)
    assert popped, "no snapshot after the port event"
    assert time.monotonic() - t0 < LIMIT_S
    message = json.loads(popped[1])
    assert message["headers"]["task"] == "fabricweb.telemetry.tasks.ingest_snapshot"
    snap = snapshot_args(message)
    assert snap["host"] == "cn001" and len(snap["devices"]) == 2


def test_a_flapping_link_sends_at_most_one_extra_snapshot_a_second(agent, broker, fake_pyverbs, events):
    _, client = broker
    t0 = time.time()
    for flap in range(30):  # 30 transitions in 1.5 s
        down = flap % 2 == 0
        fake_pyverbs.set_port("mlx5_0", 1, state=1 if down else 4, phys_state=2 if down else 5)
        fake_pyverbs.push_event("mlx5_0", events.IBV_EVENT_PORT_ERR if down else events.IBV_EVENT_PORT_ACTIVE)
        time.sleep(0.05)
    storm_s = time.time() - t0
    # When each snapshot was read (collected_at), whenever it is taken off the queue.
    read_at = [read_time(message) for _, message in snapshots(client, 2.5)]
    # The first at once, then one a second while it flaps, and one after the last change.
    assert read_at and read_at[0] - t0 < LIMIT_S
    assert 2 <= len(read_at) <= 1 + int(storm_s) + 1
    gaps = [b - a for a, b in pairwise(read_at)]
    assert min(gaps) >= 0.95, gaps
    assert read_at[-1] > t0 + storm_s - 1.0  # the state the storm ended in was read after it
    assert agent.events.snapshots.sent == len(read_at)
