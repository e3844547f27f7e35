"""Covers fabricweb/nodeauth.py, fabricweb/agent/config.py, fabricweb/agent/tasks.py, fabricweb/brokertls.py,
fabricweb/agent/__main__.py; through them fabricweb/agent/events.py.

A node's credentials: the key that signs its snapshots, the CA its broker's certificate is checked against."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from collectors.sim import Fabric
from fabricweb import nodeauth
from fabricweb.agent.config import AgentConfig, ConfigError
from fabricweb.agent.tasks import Agent
from fabricweb.brokertls import redis_py_options
from fabricweb.names import INGEST_SNAPSHOT
from harness import stop

REPO = Path(__file__).resolve().parents[2]
SECRET = "site-secret-for-agent-tests-" + "s" * 40


def key(node: str) -> str:
    return nodeauth.node_key(SECRET, node)


def config_error(env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        AgentConfig.from_env(env)
    return str(caught.value)


@pytest.fixture
def tree(tmp_path):
    Fabric.create(str(tmp_path / "sim"), 2)
    return tmp_path / "sim"


def test_the_agent_takes_its_key_from_the_environment_or_a_file(tmp_path):
    base = {"FABRIC_NODE_NAME": "cn042"}
    assert AgentConfig.from_env(base).node_keys == {}
    assert AgentConfig.from_env({**base, "FABRIC_NODE_KEY": key("cn042")}).node_keys == {"cn042": key("cn042")}
    one = tmp_path / "cn042.key"
    one.write_text(key("cn042") + "\n")  # as `manage.py node_key` prints it, one per file
    assert AgentConfig.from_env({**base, "FABRIC_NODE_KEY_FILE": str(one)}).node_keys == {"cn042": key("cn042")}
    several = tmp_path / "keys.json"
    several.write_text(json.dumps({"cn001": key("cn001"), "cn002": key("cn002")}))  # `node_key --json`
    sim = {"FABRIC_SIM_DIR": str(tmp_path), "FABRIC_NODE_KEY_FILE": str(several)}
    assert AgentConfig.from_env(sim).node_keys == {"cn001": key("cn001"), "cn002": key("cn002")}
    # The key never shows in the configuration's repr (a log line, a traceback).
    assert key("cn042") not in repr(AgentConfig.from_env({**base, "FABRIC_NODE_KEY": key("cn042")}))


def test_a_key_that_cannot_be_used_stops_the_agent_with_a_message_naming_the_variable(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cn001": "abc"}')
    one = tmp_path / "one.key"
    one.write_text(key("cn001"))
    assert (
        config_error({"FABRIC_NODE_KEY": "x" * 64})
        == "FABRIC_NODE_KEY: expected 64 hex digits (manage.py node_key NODE)"
    )
    both = {"FABRIC_NODE_KEY": key("cn001"), "FABRIC_NODE_KEY_FILE": str(one)}
    assert config_error(both) == "FABRIC_NODE_KEY and FABRIC_NODE_KEY_FILE are both set: give one"
    missing = str(tmp_path / "nowhere.key")
    assert config_error({"FABRIC_NODE_KEY_FILE": missing}) == f"FABRIC_NODE_KEY_FILE={missing!r}: not a readable file"
    assert config_error({"FABRIC_NODE_KEY_FILE": str(bad)}).endswith(
        "the key of cn001: expected 64 hex digits (manage.py node_key NODE)"
    )
    sim_one = {"FABRIC_SIM_DIR": str(tmp_path), "FABRIC_NODE_KEY": key("cn001")}
    assert config_error(sim_one).startswith("FABRIC_NODE_KEY is one node's key: an agent serving FABRIC_SIM_DIR needs")
    # A served node without a key would have every snapshot refused: the agent does not start.
    config = AgentConfig(broker_url="redis://", node_name="head", node_keys={"cn001": key("cn001")})
    with pytest.raises(ConfigError, match="FABRIC_NODE_KEY_FILE has no key for cn002, cn003"):
        config.check_keys(["cn001", "cn002", "cn003"])


def test_the_broker_password_comes_from_a_file_into_the_url_keeping_the_user(tmp_path):
    secret = tmp_path / "redis.password"
    secret.write_text("p@ss/word\n")  # a systemd credential, as the unit loads it
    env = {"REDIS_URL": "rediss://node.cn042@broker:6379/0", "REDIS_PASSWORD_FILE": str(secret)}
    assert AgentConfig.from_env(env).broker_url == "rediss://node.cn042:p%40ss%2Fword@broker:6379/0"
    assert AgentConfig.from_env({"REDIS_PASSWORD": "x"}).broker_url == "redis://:x@127.0.0.1:6379/0"
    both = {**env, "REDIS_PASSWORD": "x"}
    assert config_error(both) == "REDIS_PASSWORD and REDIS_PASSWORD_FILE are both set: give one"
    twice = {"REDIS_URL": "redis://u:old@broker/0", "REDIS_PASSWORD": "x"}
    assert config_error(twice).endswith("does not go with a REDIS_URL that has a password already")
    (tmp_path / "empty").write_text("\n")
    empty = str(tmp_path / "empty")
    assert config_error({"REDIS_PASSWORD_FILE": empty}) == f"REDIS_PASSWORD_FILE={empty!r} is empty"


def test_each_snapshot_is_signed_with_the_key_of_the_node_it_names(tree):
    sent: list[tuple[str, dict]] = []

    class Publisher:  # where the snapshot would go
        def send(self, name, queue, args=None, kwargs=None, **options):
            sent.append((name, kwargs, options))

    config = AgentConfig(
        broker_url="redis://", node_name="head", sim_dir=str(tree), node_keys={n: key(n) for n in ("cn001", "cn002")}
    )
    agent = Agent(config, Publisher())
    agent.collect("cn001")
    agent.collect("cn002")
    assert [name for name, _, _ in sent] == [INGEST_SNAPSHOT, INGEST_SNAPSHOT]
    hosts = [nodeauth.verify(SECRET, kwargs)["host"] for _, kwargs, _ in sent]  # what ingest checks
    assert hosts == ["cn001", "cn002"]
    assert sent[0][2]["kwargsrepr"] == "{signed snapshot of cn001}"  # the snapshot is not copied into the headers
    with pytest.raises(nodeauth.NotAuthenticated, match="bad signature for node 'cn002'"):
        nodeauth.verify(SECRET, {**sent[0][1], "node": "cn002"})


def start_agent(tree: Path, tmp: Path, **env: str) -> subprocess.Popen:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "SECRET_KEY", "DJANGO_", "FABRIC_"))
    }
    env = {**keep, "FABRIC_NODE_NAME": "cn001", "FABRIC_SYSFS_ROOT": str(tree / "cn001"), "LOG_LEVEL": "INFO", **env}
    log = open(tmp / "agent.log", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen([sys.executable, "-m", "fabricweb.agent"], env=env, cwd=REPO, stdout=log, stderr=log)
    log.close()
    return proc


def test_the_agent_sends_over_tls_to_a_broker_whose_certificate_the_sites_ca_signed(tree, tmp_path, tls_redis):
    url, ca = tls_redis
    client = redis.Redis.from_url(url, **redis_py_options(url, ca))
    client.delete("snapshots")
    agent = start_agent(tree, tmp_path, REDIS_URL=url, FABRIC_REDIS_CA_FILE=ca, FABRIC_NODE_KEY=key("cn001"))
    try:
        hello = client.blpop(["snapshots"], timeout=30)
        assert hello is not None, (tmp_path / "agent.log").read_text()
        message = json.loads(hello[1])
        assert message["headers"]["task"] == INGEST_SNAPSHOT
        assert message["properties"]["body_encoding"] is None  # sent as it is, not in base64 (PLAIN_BODIES)
        kwargs = json.loads(message["body"])[1]
        assert nodeauth.verify(SECRET, kwargs)["host"] == "cn001"
    finally:
        stop(agent, 15)


def test_the_agent_will_not_talk_to_a_broker_it_cannot_verify(tree, tmp_path, tls_redis):
    url, _ = tls_redis
    # No FABRIC_REDIS_CA_FILE: the system's CAs never signed this certificate (an impostor, as far as we know).
    agent = start_agent(tree, tmp_path, REDIS_URL=url)
    try:
        log = tmp_path / "agent.log"
        deadline = time.monotonic() + 30
        while "certificate verify failed" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "certificate verify failed" in log.read_text(), log.read_text()
    finally:
        stop(agent, 15)
    assert "hello: sent" not in log.read_text()
    unreadable = tmp_path / "nowhere.pem"
    assert (
        config_error({"FABRIC_REDIS_CA_FILE": str(unreadable)})
        == f"FABRIC_REDIS_CA_FILE={str(unreadable)!r}: not a readable file"
    )
