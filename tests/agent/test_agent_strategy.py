"""Covers fabricweb/agent/strategy.py, fabricweb/agent/app.py.

The agent's worker runs a poll by calling its task at once (no Celery Request or trace): a poll past its
`expires` is dropped and said, a failing one is logged and the worker goes on, a body that is no task call is
refused as Celery refuses it, and each message is acknowledged once. The real agent's worker answering polls
over Redis is tests/agent/test_agent_broker_acl.py's.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import celery
import pytest
from celery.exceptions import InvalidTaskError

from fabricweb.agent.app import create_app
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.strategy import direct, expired
from fabricweb.names import COLLECT

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


class Message:
    def __init__(self, body, **headers) -> None:
        self.body, self.headers = json.dumps(body), {"task": COLLECT, "id": "t1", **headers}

    def decode(self):
        return json.loads(self.body)


class Consumer:
    connection_errors = (ConnectionError,)


def run(task, message) -> list:
    acks = []
    direct(task, None, Consumer())(message, None, lambda *a: acks.append(a), None, [])
    return acks


class Task:
    name = COLLECT

    def __init__(self, fail: bool = False) -> None:
        self.calls, self.fail = [], fail

    def run(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if self.fail:
            raise OSError("the broker went away")
        return {"node": kwargs.get("node")}


def test_it_tells_an_expired_poll_by_its_header():
    assert expired(None) is False
    assert expired((NOW - timedelta(seconds=1)).isoformat(), NOW) is True
    assert expired((NOW + timedelta(seconds=1)).isoformat(), NOW) is False
    assert expired("2026-12-06T11:59:59", NOW) is True  # naive: UTC, as Celery writes it by default


def test_it_calls_the_task_with_the_messages_arguments_and_acks_once():
    task = Task()
    later = (datetime.now(UTC) + timedelta(seconds=30)).isoformat()
    acks = run(task, Message([[], {"node": "cn001"}, {}], expires=later))
    assert task.calls == [((), {"node": "cn001"})]
    assert len(acks) == 1 and acks[0][1] == (ConnectionError,)


def test_it_drops_an_expired_poll_unrun_and_says_so(caplog):
    task = Task()
    late = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    with caplog.at_level(logging.WARNING):
        acks = run(task, Message([[], {"node": "cn001"}, {}], expires=late))
    assert task.calls == [] and len(acks) == 1
    assert "poll of cn001 expired before this agent could take it" in caplog.text


def test_it_logs_a_failing_poll_with_its_traceback_and_acks_it(caplog):
    task = Task(fail=True)
    with caplog.at_level(logging.ERROR):
        acks = run(task, Message([["cn001"], {}, {}]))
    assert task.calls == [(("cn001",), {})] and len(acks) == 1
    assert f"{COLLECT}[t1] failed" in caplog.text and "OSError: the broker went away" in caplog.text


@pytest.mark.parametrize("body", [{"node": "cn001"}, [[], ["cn001"], {}], ["cn001", {}, {}], [[], {}]])
def test_it_refuses_a_body_that_is_no_task_call(body):
    task = Task()
    with pytest.raises(InvalidTaskError):
        run(task, Message(body))
    assert task.calls == []


def test_the_agents_collect_task_runs_by_this_strategy(tmp_path):
    current = celery.current_app._get_current_object()
    config = AgentConfig(broker_url="memory://", node_name="cn001", sysfs_root=str(tmp_path))
    app, _ = create_app(config, ["cn001"])
    try:
        assert app.tasks[COLLECT].Strategy == "fabricweb.agent.strategy:direct"
    finally:
        app.close()
        current.set_current()  # the agent's app makes itself current, as in its own process
