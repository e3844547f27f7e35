"""Covers fabricweb/nodeauth.py, fabricweb/brokeracl.py, fabricweb/fabricagent/config.py,
fabricweb/identity/management/commands/broker_acl.py, fabricweb/fabricagent/__main__.py; through them
fabricweb/fabricagent/app.py, fabricweb/fabricagent/tasks.py, fabricweb/heap.py.

The fabric collector as it runs on an IB host: `python -m fabricweb.fabricagent` under ibsim-run, as its own
Redis ACL user on a real redis-server, signing with its own key. It registers with a first sweep, sweeps on
central's dispatch, and its user can do nothing but take its sweeps and push its snapshots."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
import redis
from celery import Celery
from django.core.management import call_command
from kombu import Connection, Exchange, Queue

from collectors.sim import Fabric, SwitchOptions
from fabricweb import nodeauth
from fabricweb.brokeracl import collector_password
from fabricweb.fabricagent.config import ConfigError, FabricAgentConfig
from fabricweb.names import SNAPSHOT_QUEUE, SWEEP, SWEEP_QUEUE
from tests.ibsim_support import Ibsim, needs_ibsim
from tests.loopback import redis_with_acl

SECRET = "site-secret-for-acl-tests-" + "f" * 40
NOPERM = redis.exceptions.NoPermissionError


@pytest.fixture
def broker(tmp_path, settings):
    """(host:port, central URL): a redis-server with the collector's user from `broker_acl --collector`."""
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    out = io.StringIO()
    call_command("broker_acl", "--collector", "fabric-a", stdout=out)
    with redis_with_acl(tmp_path, out.getvalue()) as server:
        yield server


def snapshot_of(message: bytes) -> dict:
    body = json.loads(json.loads(message)["body"])
    kwargs = body[1]
    return nodeauth.verify(SECRET, kwargs, nodeauth.COLLECTOR)


@needs_ibsim
def test_the_collector_sweeps_as_its_own_broker_user_and_can_do_nothing_else(broker, tmp_path, request):
    address, central_url = broker
    sim = Ibsim(Fabric.create(str(tmp_path / "sim"), 6, seed=3, switches=SwitchOptions()), request)
    central = redis.Redis.from_url(central_url, socket_timeout=40)
    # `manage.py ingest` declares the sweeps queue before any collector sends to it.
    with Connection(central_url) as conn:
        Queue(SWEEP_QUEUE, Exchange(SWEEP_QUEUE, "direct"), routing_key=SWEEP_QUEUE)(conn.channel()).declare()
    password = tmp_path / "redis.password"
    password.write_text(collector_password(SECRET, "fabric-a") + "\n")
    env = {
        **{k: v for k, v in sim.env.items() if not k.startswith(("DATABASE_URL", "SECRET_KEY", "DJANGO_", "FABRIC_"))},
        "REDIS_URL": f"redis://fabric.fabric-a@{address}/0",
        "REDIS_PASSWORD_FILE": str(password),
        "FABRIC_COLLECTOR_NAME": "fabric-a",
        "FABRIC_COLLECTOR_KEY": nodeauth.collector_key(SECRET, "fabric-a"),
        "LOG_LEVEL": "INFO",
    }
    log = tmp_path / "fabricagent.log"
    with open(log, "wb") as out:
        agent = subprocess.Popen(
            ["ibsim-run", sys.executable, "-m", "fabricweb.fabricagent"], env=env, cwd=tmp_path, stdout=out, stderr=out
        )
    beat = Celery("acl-beat", broker=central_url, set_as_current=False)
    beat.conf.update(task_serializer="json", accept_content=["json"])
    try:
        hello = central.blpop([SWEEP_QUEUE], timeout=30)
        assert hello, f"no first sweep\n{log.read_text()}"
        first = snapshot_of(hello[1])
        assert (first["collector"], first["mode"], len(first["nodes"]["rows"])) == ("fabric-a", "full", 3 + 9)
        beat.send_task(SWEEP, kwargs={"collector": "fabric-a"}, queue="fabric.fabric-a", expires=30)
        second = central.blpop([SWEEP_QUEUE], timeout=30)
        assert second, f"no sweep for the poll\n{log.read_text()}"
        assert snapshot_of(second[1])["collected_at"] > first["collected_at"]
    finally:
        beat.close()
        agent.terminate()
        try:
            assert agent.wait(20) == 0, log.read_text()
        finally:
            agent.kill()
    assert "NOPERM" not in log.read_text() and "No permissions" not in log.read_text(), log.read_text()

    user = redis.Redis.from_url(
        f"redis://fabric.fabric-a:{collector_password(SECRET, 'fabric-a')}@{address}/0", socket_timeout=5
    )
    central.lpush("node.cn001", "a poll of cn001")
    refused = {
        "a node's polls": lambda: user.brpop(["node.cn001"], timeout=1),
        "the snapshots of every node": lambda: user.brpop([SNAPSHOT_QUEUE], timeout=1),
        "a node-sized message where nodes send": lambda: user.lpush(SNAPSHOT_QUEUE, "forged"),
        "another's sweep": lambda: user.brpop([SWEEP_QUEUE], timeout=1),
        "a central queue": lambda: user.lpush("ingest", "forged"),
        "FLUSHALL": lambda: user.flushall(),
        "listing keys": lambda: user.keys("*"),
    }
    for what, attempt in refused.items():
        with pytest.raises(NOPERM):
            attempt()
            pytest.fail(f"allowed: {what}")
    # A node's password, whatever the node is named, does not open a collector's user.
    from fabricweb.brokeracl import node_password

    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(f"redis://fabric.fabric-a:{node_password(SECRET, 'fabric-a')}@{address}/0").ping()


def test_its_configuration_is_read_strictly():
    assert FabricAgentConfig.from_env({"FABRIC_COLLECTOR_NAME": "sm01-fabric"}).collector == "sm01-fabric"
    bad = {
        "FABRIC_COLLECTOR_NAME": ("../x", "FABRIC_COLLECTOR_NAME='../x': expected a short host name"),
        "FABRIC_SWEEP_WINDOW": ("0", "FABRIC_SWEEP_WINDOW='0': must be at least 1"),
        "FABRIC_COLLECTOR_KEY": ("short", "FABRIC_COLLECTOR_KEY: expected 64 hex digits"),
        "FABRIC_FULL_SWEEP_EVERY": ("often", "FABRIC_FULL_SWEEP_EVERY='often': expected an integer"),
    }
    for name, (value, message) in bad.items():
        with pytest.raises(ConfigError) as e:
            FabricAgentConfig.from_env({name: value})
        assert str(e.value).startswith(message)
