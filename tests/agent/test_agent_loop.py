"""Covers fabricweb/agent/loop.py, fabricweb/agent/__main__.py.

The node agent's own loop: it takes central beat's `collect` (a Celery task message, sent here by a real Celery
app) off its queue and answers it, drops what is no poll of its own or came too late and says so, logs a failing
poll and goes on, waits out a broker that is not there yet, and stops at once on SIGTERM while it waits. Real
Redis; the agent as `python -m fabricweb.agent` where the process matters.
"""

from __future__ import annotations

import base64
import json
import logging
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from celery import Celery

from collectors.sim import Fabric
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.loop import BadPoll, PollLoop, expiry, poll_of
from fabricweb.names import COLLECT, PLAIN_BODIES, SNAPSHOT_QUEUE
from harness import free_port, running_redis, start_redis, stop, wait_for
from tests.e2e.e2e_harness import clean_env, leased_redis_db

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.fixture
def url():
    with leased_redis_db() as url:
        yield url


def beat(url: str, plain: bool = True) -> Celery:
    """Central beat's sending side, as fabricweb/celery.py configures it (plain JSON bodies, or kombu's base64)."""
    app = Celery("central-beat", broker=url, set_as_current=False)
    options = dict(PLAIN_BODIES) if plain else {}
    app.conf.update(task_serializer="json", accept_content=["json"], broker_transport_options=options)
    return app


def sent_by_celery(url: str, plain: bool = True, **options) -> bytes:
    """The raw message Celery stores on node.cn001 for a `collect` sent with `options`."""
    app = beat(url, plain)
    try:
        app.send_task(COLLECT, queue="node.cn001", **options)
    finally:
        app.close()
    raw = redis.Redis.from_url(url).rpop("node.cn001")
    assert raw is not None
    return raw


def envelope(body, task: str = COLLECT, **headers) -> str:
    return json.dumps(
        {
            "body": json.dumps(body),
            "content-type": "application/json",
            "headers": {"task": task, "id": "t1", **headers},
            "properties": {"body_encoding": None},
        }
    )


def test_it_reads_the_node_and_expiry_of_a_collect_celery_sent(url):
    later = NOW + timedelta(seconds=10)
    assert poll_of(sent_by_celery(url, kwargs={"node": "cn001"}, expires=later)) == ("cn001", later)
    assert poll_of(sent_by_celery(url, args=["cn001"])) == ("cn001", None)
    # kombu's default body encoding, should a central process send without PLAIN_BODIES.
    assert poll_of(sent_by_celery(url, plain=False, kwargs={"node": "cn002"})) == ("cn002", None)


def test_it_reads_a_naive_expiry_as_utc_as_celery_writes_it():
    assert expiry(None) is None and expiry("") is None
    assert expiry("2026-12-07T11:59:59") == datetime(2026, 12, 7, 11, 59, 59, tzinfo=UTC)
    with pytest.raises(BadPoll, match="an expires header that is no date: 'soon'"):
        expiry("soon")


@pytest.mark.parametrize(
    "raw, reason",
    [
        ("{not json", "not JSON"),
        (json.dumps([1, 2]), "not a Celery task message (no headers)"),
        (envelope([[], {"node": "cn001"}, {}], task="tests.e2e.probe_database"), "a task this agent does not run"),
        (envelope({"node": "cn001"}), "a protocol 2 body is [args, kwargs, embed]"),
        (envelope([[], ["cn001"], {}]), "a protocol 2 body is [args, kwargs, embed]"),
        (envelope([[], {}]), "a protocol 2 body is [args, kwargs, embed]"),
        (envelope([[], {}, {}]), "no node named"),
        (envelope([[42], {}, {}]), "no node named"),
    ],
)
def test_it_refuses_a_message_that_is_no_collect_and_says_why(raw, reason):
    with pytest.raises(BadPoll) as caught:
        poll_of(raw)
    assert str(caught.value).startswith(reason)


def test_it_refuses_a_body_that_is_not_json():
    pickled = json.loads(envelope([[], {"node": "cn001"}, {}]))
    pickled["content-type"] = "application/x-python-serialize"
    with pytest.raises(BadPoll, match="a body of 'application/x-python-serialize': the agent takes JSON only"):
        poll_of(json.dumps(pickled))
    garbled = json.loads(envelope([]))
    garbled["properties"]["body_encoding"], garbled["body"] = "base64", base64.b64encode(b"[[").decode()
    with pytest.raises(BadPoll, match="a body that is not JSON"):
        poll_of(json.dumps(garbled))


@pytest.fixture
def loop(url, tmp_path):
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    config = AgentConfig(broker_url=url, node_name="cn001", sysfs_root=str(tmp_path / "cn001"))
    loop = PollLoop(config, ["cn001"])
    yield loop
    loop.polls.close()
    loop.agent.stop()


def test_it_answers_a_poll_with_the_nodes_snapshot(loop, url):
    loop.answer(sent_by_celery(url, kwargs={"node": "cn001"}, expires=datetime.now(UTC) + timedelta(seconds=30)))
    raw = redis.Redis.from_url(url).rpop(SNAPSHOT_QUEUE)
    assert raw is not None
    message = json.loads(raw)
    snapshot = json.loads(message["body"])[0][0]
    assert message["headers"]["task"] == "fabricweb.telemetry.tasks.ingest_snapshot"
    assert snapshot["host"] == "cn001" and len(snapshot["devices"]) == 2


def test_it_drops_an_expired_poll_unread_and_says_so(loop, url, caplog):
    late = sent_by_celery(url, kwargs={"node": "cn001"}, expires=NOW - timedelta(seconds=1))
    with caplog.at_level(logging.WARNING):
        loop.answer(late, now=NOW)
    assert redis.Redis.from_url(url).llen(SNAPSHOT_QUEUE) == 0
    assert "poll of cn001 expired before this agent could take it" in caplog.text


def test_it_logs_a_message_it_cannot_run_and_a_failing_poll_and_goes_on(loop, url, caplog):
    with caplog.at_level(logging.ERROR):
        loop.answer(envelope([[], {"node": "cn001"}, {}], task="tests.e2e.probe_database"))
        loop.answer(envelope([[], {"node": "cn002"}, {}]))  # not a node this agent reads
        loop.answer(sent_by_celery(url, kwargs={"node": "cn001"}))
    assert "dropped a message on node.cn001: a task this agent does not run: 'tests.e2e.probe_database'" in caplog.text
    assert "poll of cn002 failed" in caplog.text and "NotServed: this agent reads cn001, not cn002" in caplog.text
    assert redis.Redis.from_url(url).llen(SNAPSHOT_QUEUE) == 1  # the good poll after both was answered


def test_a_wait_the_broker_refuses_is_said_and_asked_again_later_not_at_once(tmp_path, monkeypatch, caplog):
    from fabricweb.agent import loop as loop_module

    monkeypatch.setattr(loop_module, "REFUSED_PAUSE_S", 0.5)  # (32 s on a node)
    Fabric.create(str(tmp_path), 1)
    with running_redis() as server:
        redis.Redis.from_url(server.url).execute_command("ACL", "SETUSER", "default", "-brpop")
        config = AgentConfig(broker_url=server.url, node_name="cn001", sysfs_root=str(tmp_path / "cn001"))
        refused = PollLoop(config, ["cn001"])
        try:
            started = time.monotonic()
            with caplog.at_level(logging.ERROR):
                refused.once()
            took = time.monotonic() - started
        finally:
            refused.polls.close()
            refused.agent.stop()
    assert took >= 0.5  # one refusal, then the pause: no loop asking again at once
    assert "the broker refused the wait for a poll (NOPERM" in caplog.text and "asking again in 0.5 s" in caplog.text


def start_agent(url: str, tree: Path, log: Path) -> subprocess.Popen:
    env = clean_env(REDIS_URL=url, FABRIC_NODE_NAME="cn001", FABRIC_SYSFS_ROOT=str(tree), LOG_LEVEL="INFO")
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "fabricweb.agent"], env=env, cwd=REPO, stdout=out, stderr=out)


def test_the_agent_answers_beats_polls_and_stops_at_once_on_sigterm_while_it_waits(url, tmp_path):
    Fabric.create(str(tmp_path / "sim"), 1)
    central = redis.Redis.from_url(url)
    log = tmp_path / "agent.log"
    agent = start_agent(url, tmp_path / "sim" / "cn001", log)
    try:
        assert central.blpop([SNAPSHOT_QUEUE], timeout=30), f"no hello\n{log.read_text()}"
        app = beat(url)
        try:
            for _ in range(2):
                app.send_task(COLLECT, kwargs={"node": "cn001"}, queue="node.cn001", expires=30)
                assert central.blpop([SNAPSHOT_QUEUE], timeout=10), f"poll not answered\n{log.read_text()}"
        finally:
            app.close()
        time.sleep(1.0)  # into its BRPOP, which waits up to FABRIC_BROKER_WAIT (60 s)
        asked = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(20) == 0, log.read_text()
        took = time.monotonic() - asked
    finally:
        agent.kill()
    assert took < 3.0, f"stopped {took:.1f} s after SIGTERM\n{log.read_text()}"
    assert "agent ready: taking polls from node.cn001" in log.read_text()


def test_the_agent_waits_for_a_broker_not_there_yet_then_says_hello(tmp_path):
    Fabric.create(str(tmp_path / "sim"), 1)
    port = free_port()
    log = tmp_path / "agent.log"
    agent = start_agent(f"redis://127.0.0.1:{port}/0", tmp_path / "sim" / "cn001", log)
    server = None
    try:
        wait_for("the agent saying the broker is not there", lambda: "not reachable" in log.read_text(), 30)
        assert agent.poll() is None, log.read_text()
        server = start_redis(port=port)
        central = redis.Redis.from_url(server.url)
        assert central.blpop([SNAPSHOT_QUEUE], timeout=30), f"no hello once the broker came\n{log.read_text()}"
        assert f"broker 127.0.0.1:{port} not reachable" in log.read_text()
    finally:
        assert stop(agent) == 0, log.read_text()
        if server is not None:
            server.stop()
