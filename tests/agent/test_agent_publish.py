"""Covers fabricweb/agent/publish.py, fabricweb/agent/tasks.py, collectors/sysparse.py (a PCIe link speed).

The agent pushes its snapshot's task message itself (one LPUSH) instead of through Celery's send_task: the
message must be the one send_task writes, read back the same by kombu, and signed as before. Real Redis (a
leased test database); Celery only on the test's side, to compare.
"""

from __future__ import annotations

import json

import pytest
import redis
from celery import Celery
from kombu import Connection

from collectors.sim import Fabric
from fabricweb import nodeauth
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.loop import connection
from fabricweb.agent.publish import Publisher
from fabricweb.agent.tasks import Agent
from fabricweb.names import INGEST_SNAPSHOT, PLAIN_BODIES, SNAPSHOT_QUEUE
from harness import start_redis
from tests.e2e.e2e_harness import leased_redis_db

KEY = "ab" * 32


@pytest.fixture
def broker():
    with leased_redis_db() as url:
        yield url, redis.Redis.from_url(url)


@pytest.fixture
def agent(broker, tmp_path):
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    config = AgentConfig(
        broker_url=broker[0], node_name="cn001", sysfs_root=str(tmp_path / "cn001"), node_keys={"cn001": KEY}
    )
    agent = Agent(config, Publisher(connection(config)))
    yield agent
    agent.stop()


def test_it_pushes_the_message_send_task_would(agent, broker):
    url, client = broker
    kwargs = {"snapshot": "{}", "node": "cn001", "signature": "00"}
    options = {"queue": SNAPSHOT_QUEUE, "argsrepr": "()", "kwargsrepr": "{signed snapshot of cn001}"}
    app = Celery("compare", broker=url, set_as_current=False)
    app.conf.update(task_serializer="json", accept_content=["json"], broker_transport_options=dict(PLAIN_BODIES))
    try:
        app.send_task(INGEST_SNAPSHOT, kwargs=kwargs, **options)
    finally:
        app.close()
    agent.publisher.send(INGEST_SNAPSHOT, kwargs=kwargs, **options)
    ours, celerys = (json.loads(raw) for raw in client.lrange(SNAPSHOT_QUEUE, 0, -1))  # LPUSH: newest first
    assert ours.keys() == celerys.keys()
    for part in ("headers", "properties"):
        assert ours[part].keys() == celerys[part].keys(), part
    ids = {"id", "root_id", "origin", "correlation_id", "delivery_tag", "reply_to"}
    for part in ("headers", "properties"):
        assert {k: v for k, v in ours[part].items() if k not in ids} == {
            k: v for k, v in celerys[part].items() if k not in ids
        }
    assert ours["headers"]["root_id"] == ours["headers"]["id"] == ours["properties"]["correlation_id"]
    assert json.loads(ours["body"]) == json.loads(celerys["body"])
    assert json.loads(ours["body"])[:2] == [[], kwargs]
    assert {k: ours[k] for k in ("content-type", "content-encoding")} == {
        "content-type": "application/json",
        "content-encoding": "utf-8",
    }


def test_it_sends_a_signed_snapshot_kombu_reads_back(agent, broker):
    url, _ = broker
    result = agent.collect("cn001")
    assert result == {"node": "cn001", "devices": 2, "errors": 0}
    with Connection(url) as conn:
        queue = conn.SimpleQueue(SNAPSHOT_QUEUE)
        message = queue.get(timeout=5)
        args, kwargs, embed = message.decode()
        assert message.headers["task"] == INGEST_SNAPSHOT
        assert message.headers["kwargsrepr"] == "{signed snapshot of cn001}"
        message.ack()
        queue.close()
    assert args == [] and embed == {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    snap = json.loads(kwargs["snapshot"])
    assert snap["host"] == "cn001" and snap["wire"] == 3
    assert nodeauth.sign(KEY, "cn001", kwargs["snapshot"]) == kwargs["signature"]


def test_it_sends_again_at_the_first_poll_after_the_broker_restarted(tmp_path):
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    server = start_redis()
    config = AgentConfig(broker_url=server.url, node_name="cn001", sysfs_root=str(tmp_path / "cn001"))
    agent = Agent(config, Publisher(connection(config)))
    try:
        agent.collect("cn001")
        server.stop()
        server = start_redis(port=server.port)  # the producer's connection is gone with the old server
        assert agent.collect("cn001")["node"] == "cn001"
        assert redis.Redis.from_url(server.url).llen(SNAPSHOT_QUEUE) == 1
    finally:
        agent.stop()
        server.stop()


def test_a_pcie_link_speed_past_any_generation_costs_that_value_alone(agent, broker, tmp_path):
    pci = tmp_path / "cn001" / "class" / "infiniband" / "mlx5_0" / "device"
    (pci / "current_link_speed").write_text("9" * 400 + " GT/s PCIe\n")  # read as a float: infinity
    assert agent.collect("cn001")["node"] == "cn001"  # json.dumps refused the infinity: the whole poll was lost
    (raw,) = broker[1].lrange(SNAPSHOT_QUEUE, 0, -1)
    _, kwargs, _ = json.loads(json.loads(raw)["body"])
    assert nodeauth.sign(KEY, "cn001", kwargs["snapshot"]) == kwargs["signature"]
    snap = json.loads(kwargs["snapshot"])
    (device,) = [d for d in snap["devices"] if d["name"] == "mlx5_0"]
    assert device["pci"]["current_gts"] is None and device["pci"]["max_gts"] == 16.0
    (error,) = [e for e in snap["errors"] if e["path"].endswith("current_link_speed")]
    assert error["reason"].endswith("past any PCIe generation's")
