"""Covers fabricweb/nodeauth.py, fabricweb/brokeracl.py, fabricweb/identity/management/commands/broker_acl.py,
fabricweb/agent/__main__.py; through them fabricweb/identity/management/nodeargs.py.

Per-node Redis ACL users (fabricweb/brokeracl.py), tried on a real redis-server: the agent works as its node's
user, and that user can do nothing else: no other node's polls, no central queue, no snapshot taken, no control."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.core.management import call_command
from kombu import Connection, Exchange, Queue

from collectors.sim import Fabric
from fabricweb import nodeauth
from fabricweb.brokeracl import node_password
from fabricweb.names import COLLECT, SNAPSHOT_QUEUE, snapshot_queue
from tests.loopback import redis_with_acl

REPO = Path(__file__).resolve().parents[2]
SECRET = "site-secret-for-acl-tests-" + "a" * 40
NOPERM = redis.exceptions.NoPermissionError


@pytest.fixture
def broker(tmp_path, settings):
    """(host:port, central URL): a private redis-server whose ACL file has the nodes' users from `broker_acl`."""
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    out = io.StringIO()
    call_command("broker_acl", "cn001", "cn002", stdout=out)
    with redis_with_acl(tmp_path, out.getvalue()) as server:
        yield server


def as_node(address: str, node: str, password_of: str | None = None) -> str:
    return f"redis://node.{node}:{node_password(SECRET, password_of or node)}@{address}/0"


def test_broker_acl_prints_a_user_per_node_with_only_a_hash_of_its_password(settings):
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    out = io.StringIO()
    call_command("broker_acl", "cn001", stdout=out)
    line = out.getvalue().strip()
    assert line.startswith("user node.cn001 reset on #") and "resetchannels" in line and "-@all" in line
    assert node_password(SECRET, "cn001") not in line
    out = io.StringIO()
    call_command("broker_acl", "cn001", "--passwords", stdout=out)
    assert out.getvalue().split() == ["cn001", "node.cn001", node_password(SECRET, "cn001")]
    assert node_password(SECRET, "cn001") != node_password(SECRET, "cn002")


def test_with_several_ingest_shards_a_node_may_push_only_to_its_own_shards_queue(settings):
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    settings.FABRIC_INGEST_SHARDS = 4
    out = io.StringIO()
    call_command("broker_acl", "cn001", "cn002", stdout=out)
    for node, line in zip(("cn001", "cn002"), out.getvalue().splitlines(), strict=True):
        queue = snapshot_queue(node, 4)
        assert queue.startswith("snapshots.")
        assert f"(~{queue} +lpush)" in line
        assert "~snapshots " not in line and "(~snapshots +" not in line


def test_the_agent_works_as_its_nodes_user_and_that_user_can_do_nothing_else(broker, tmp_path):
    address, central_url = broker
    central = redis.Redis.from_url(central_url)
    # `manage.py ingest` declares the snapshots queue before any node sends to it.
    with Connection(central_url) as conn:
        Queue(SNAPSHOT_QUEUE, Exchange(SNAPSHOT_QUEUE, "direct"), routing_key=SNAPSHOT_QUEUE)(
            conn.default_channel
        ).declare()
    Fabric.create(str(tmp_path / "sim"), 1)
    password_file = tmp_path / "redis.password"
    password_file.write_text(node_password(SECRET, "cn001") + "\n")
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "SECRET_KEY", "DJANGO_", "FABRIC_"))
    }
    env = {
        **keep,
        # Its user in the URL, its password in a file (the unit's credential), as a node is provisioned.
        "REDIS_URL": f"redis://node.cn001@{address}/0",
        "REDIS_PASSWORD_FILE": str(password_file),
        "FABRIC_NODE_NAME": "cn001",
        "FABRIC_SYSFS_ROOT": str(tmp_path / "sim" / "cn001"),
        "FABRIC_NODE_KEY": nodeauth.node_key(SECRET, "cn001"),
        "LOG_LEVEL": "INFO",
    }
    log = tmp_path / "agent.log"
    with open(log, "wb") as out:
        agent = subprocess.Popen([sys.executable, "-m", "fabricweb.agent"], env=env, cwd=REPO, stdout=out, stderr=out)
    beat = Celery("acl-beat", broker=central_url, set_as_current=False)
    beat.conf.update(task_serializer="json", accept_content=["json"])
    try:
        assert central.blpop([SNAPSHOT_QUEUE], timeout=30), f"no hello\n{log.read_text()}"
        # A poll taken after its interval is dropped unread, and the agent says so.
        late = datetime.now(UTC) - timedelta(seconds=5)
        beat.send_task(COLLECT, kwargs={"node": "cn001"}, queue="node.cn001", expires=late)
        beat.send_task(COLLECT, kwargs={"node": "cn001"}, queue="node.cn001", expires=30)
        assert central.blpop([SNAPSHOT_QUEUE], timeout=30), f"no snapshot for the poll\n{log.read_text()}"
        assert central.llen(SNAPSHOT_QUEUE) == 0  # one snapshot for the two polls
        assert "poll of cn001 expired before this agent could take it" in log.read_text()
    finally:
        beat.close()
        agent.terminate()
        try:
            assert agent.wait(20) == 0, log.read_text()
        finally:
            agent.kill()
    # It needed nothing it was refused, from start-up to shutdown.
    assert "NOPERM" not in log.read_text() and "No permissions" not in log.read_text(), log.read_text()

    node = redis.Redis.from_url(as_node(address, "cn001"), socket_timeout=5)
    central.lpush("node.cn002", "a poll of cn002")
    central.lpush("ingest", "a central job")
    refused = {
        "another node's polls": lambda: node.brpop(["node.cn002"], timeout=1),
        "another node's queue length": lambda: node.llen("node.cn002"),
        "its own queue's length": lambda: node.llen("node.cn001"),
        "the snapshots' length": lambda: node.llen(SNAPSHOT_QUEUE),
        "the snapshots' bindings": lambda: node.smembers("_kombu.binding.snapshots"),
        "a transaction": lambda: node.execute_command("MULTI"),
        "the snapshots of every node": lambda: node.brpop([SNAPSHOT_QUEUE], timeout=1),
        "reading the snapshots": lambda: node.lrange(SNAPSHOT_QUEUE, 0, -1),
        "a central queue": lambda: node.lrange("ingest", 0, -1),
        "pushing to a central queue": lambda: node.lpush("ingest", "forged"),
        "the central workers' unacked messages": lambda: node.hgetall("unacked"),
        "rerouting the snapshots": lambda: node.sadd("_kombu.binding.snapshots", "snapshots\x06\x16\x06\x16node.cn001"),
        # Its own keys: nothing there may grow (512 x 1 MiB on its own queue took Redis to 643 MiB).
        "growing its own poll queue": lambda: node.lpush("node.cn001", "x" * 1024),
        "its own unacked hash": lambda: node.hset("unacked.node.cn001", "tag", "x" * 1024),
        "its own unacked mutex": lambda: node.set("unacked_mutex.node.cn001", "x" * 1024),
        "its own unacked index": lambda: node.zadd("unacked_index.node.cn001", {"tag": 1}),
        "its own queue's bindings": lambda: node.sadd("_kombu.binding.node.cn001", "x" * 1024),
        "a script": lambda: node.eval("return 1", 0),
        "a remote-control broadcast": lambda: node.publish("/0.celery.pidbox", "shutdown"),
        "CONFIG": lambda: node.config_get("*"),
        "FLUSHALL": lambda: node.flushall(),
        "listing keys": lambda: node.keys("*"),
        "ACL": lambda: node.acl_list(),
    }
    for what, attempt in refused.items():
        with pytest.raises(NOPERM):
            attempt()
            pytest.fail(f"allowed: {what}")
    assert central.llen("node.cn002") == 1 and central.llen("ingest") == 1 and central.dbsize() > 0
    # Celery's own broadcast, as that node's user: refused by the broker before any worker sees it.
    attacker = Celery("acl-attacker", broker=as_node(address, "cn001"), set_as_current=False)
    try:
        with pytest.raises(Exception, match=r"(?i)no permissions|NOPERM"):
            attacker.control.broadcast("shutdown")
    finally:
        attacker.close()
    # Another node's password does not open this node's user.
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(as_node(address, "cn001", password_of="cn002"), socket_timeout=5).ping()
