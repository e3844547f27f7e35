"""Covers fabricweb/agent/__main__.py, fabricweb/agent/loop.py, fabricweb/agent/config.py, fabricweb/agent/poll.py.

The node agent: which nodes it serves, what it reads, how it starts, and that it loads neither Django nor Celery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.sim import Fabric
from fabricweb.agent.__main__ import parse_args
from fabricweb.agent.config import AgentConfig, ConfigError, NotServed
from fabricweb.agent.loop import PollLoop
from fabricweb.agent.poll import Poller
from fabricweb.celery import app
from fabricweb.names import QUEUE_OF, task_routes

REPO = Path(__file__).resolve().parents[2]
# What the agent may load of the project: its own package, the collectors, and the standard-library-only
# modules it shares with the central side (names, the node signature, the broker's TLS rule and ACL).
AGENT_PACKAGES = ("fabricweb.agent", "collectors")
AGENT_MODULES = ("fabricweb", "fabricweb.names", "fabricweb.nodeauth", "fabricweb.brokertls", "fabricweb.brokeracl")


def agents_own(module: str) -> bool:
    return module in AGENT_MODULES or any(module == p or module.startswith(p + ".") for p in AGENT_PACKAGES)


def route(name: str) -> str:
    """The queue a task sent by name goes to from this process, whether or not it has the task imported."""
    return app.amqp.router.route({}, name, args=(), kwargs={}, task_type=app.tasks.get(name))["queue"].name


def agent_env(**extra: str) -> dict[str, str]:
    """A compute node's environment: none of the central variables (DATABASE_URL, SECRET_KEY, ...)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "SECRET_KEY", "DJANGO_", "FABRIC_"))
    }
    return {**env, **extra}


@pytest.fixture
def sim_dir(tmp_path):
    Fabric.create(str(tmp_path), 3)
    (tmp_path / "not-a-node").mkdir()  # no class/infiniband: not served
    return tmp_path


def test_each_task_goes_to_the_queue_the_names_module_states_once():
    assert route("fabricweb.scheduling.dispatch_collect") == "ingest"
    assert route("fabricweb.scheduling.run_exclusive") == "ingest"
    assert route("fabricweb.telemetry.tasks.rollup_samples") == "ingest"
    assert route("fabricweb.health.tasks.check_stale") == "ingest"
    assert route("fabricweb.telemetry.tasks.ingest_snapshot") == "snapshots"
    assert route("fabricweb.alerts.tasks.tick") == "alerts"
    # Exact names from fabricweb/names.py, for both apps: no wildcard, no copy.
    assert app.conf.task_routes == task_routes() == {name: {"queue": q} for name, q in QUEUE_OF.items()}
    # Every central task is registered under the name the table states (none renamed by a module move); a
    # snapshot is a message `manage.py ingest` reads, no task a worker runs.
    app.loader.import_default_modules()
    assert set(QUEUE_OF) - set(app.tasks) == {"fabricweb.telemetry.tasks.ingest_snapshot"}
    # The node agent's task is sent by name, never registered centrally.
    assert "fabricweb.agent.tasks.collect" not in app.tasks


def test_a_sim_agent_serves_every_node_tree_in_its_directory(sim_dir):
    config = AgentConfig(broker_url="redis://", node_name="head", sim_dir=str(sim_dir))
    assert config.served_nodes() == ["cn001", "cn002", "cn003"]
    assert config.root_of("cn002") == os.path.join(sim_dir, "cn002")
    snap = Poller(config).snapshot("cn002")
    assert snap["host"] == "cn002" and snap["devices"] and not snap["errors"]


def test_a_sim_agent_refuses_names_that_would_leave_its_directory(sim_dir):
    config = AgentConfig(broker_url="redis://", node_name="head", sim_dir=str(sim_dir))
    for name in ("../etc", ".hidden", "a/b"):
        with pytest.raises(NotServed):
            config.root_of(name)


def test_a_node_agent_reads_only_its_own_node(tmp_path):
    config = AgentConfig(broker_url="redis://", node_name="cn042", sysfs_root=str(tmp_path))
    assert config.served_nodes() == ["cn042"]
    assert config.root_of("cn042") == str(tmp_path)
    with pytest.raises(NotServed, match="reads cn042, not cn043"):
        config.root_of("cn043")


def test_the_agent_takes_polls_only_from_its_nodes_queues():
    config = AgentConfig(broker_url="redis://127.0.0.1:1/0", node_name="cn001", log_level="WARNING")
    loop = PollLoop(config, ["cn001", "cn002"])
    try:
        assert loop.queues == ["node.cn001", "node.cn002"]
    finally:
        loop.polls.close()
        loop.agent.stop()
    assert parse_args(["-l", "debug"]).loglevel == "DEBUG" and parse_args([]).loglevel is None


def test_the_agent_reads_its_configuration_strictly_naming_the_variable():
    env = {"REDIS_URL": "redis://broker:6379/0", "FABRIC_NODE_NAME": "cn042", "FABRIC_HW_COUNTERS_EVERY": "3"}
    config = AgentConfig.from_env(env)
    assert (config.broker_url, config.node_name, config.hw_counters_every) == ("redis://broker:6379/0", "cn042", 3)
    bad = [
        ({"FABRIC_NODE_NAME": "../etc"}, "FABRIC_NODE_NAME='../etc': expected a short host name"),
        ({"REDIS_URL": "http://u:secret@broker/"}, "REDIS_URL='http://u:***@broker/': expected a URL"),
        ({"FABRIC_POLL_DEADLINE": "soon"}, "FABRIC_POLL_DEADLINE='soon': expected a number"),
        ({"FABRIC_HW_COUNTERS_EVERY": "0"}, "FABRIC_HW_COUNTERS_EVERY='0': must be at least 1"),
        ({"FABRIC_WATCH_EVENTS": "maybe"}, "FABRIC_WATCH_EVENTS='maybe': expected one of auto, on, off"),
        ({"LOG_LEVEL": ""}, "LOG_LEVEL is set but empty"),
    ]
    for values, message in bad:
        with pytest.raises(ConfigError) as caught:
            AgentConfig.from_env(values)
        assert str(caught.value).startswith(message)


def test_the_agent_loads_neither_django_nor_celery_nor_central_code_even_with_central_settings_in_its_environment():
    # The loop is built as `python -m fabricweb.agent` builds it, with all it may import on a poll imported.
    probe = (
        "import sys, json\n"
        "from fabricweb.agent.__main__ import main\n"
        "from fabricweb.agent.config import AgentConfig\n"
        "from fabricweb.agent.loop import PollLoop\n"
        "import fabricweb.agent.events, fabricweb.agent.poll, collectors.wire, collectors.watch\n"
        "loop = PollLoop(AgentConfig.from_env(), ['cn001'])\n"
        "print(json.dumps({'modules': sorted(sys.modules)}))\n"
    )
    env = agent_env(
        REDIS_URL="redis://127.0.0.1:1/0",
        FABRIC_NODE_NAME="cn001",
        # What a careless unit file might carry over from the central side: ignored.
        DJANGO_SETTINGS_MODULE="fabricweb.settings",
        DATABASE_URL="postgres://fabric:secret@db/fabric",
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    # Nothing but the standard library and the project: a node installs the project alone (docs/agent.md).
    packages = {m.split(".")[0] for m in seen["modules"]} - set(sys.stdlib_module_names)
    assert sorted(p for p in packages if not p.startswith("_")) == ["collectors", "fabricweb"]
    project = [m for m in seen["modules"] if m.split(".")[0] in ("fabricweb", "collectors")]
    assert [m for m in project if not agents_own(m)] == []
    assert "fabricweb.agent.loop" in seen["modules"]


def test_the_agent_refuses_to_start_with_no_node_tree_to_serve(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "fabricweb.agent"],
        env=agent_env(FABRIC_SIM_DIR=str(tmp_path)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert f"no node trees (<name>/class/infiniband) under {tmp_path}" in out.stderr


def test_the_agent_refuses_to_start_with_a_bad_variable_and_says_which():
    out = subprocess.run(
        [sys.executable, "-m", "fabricweb.agent"],
        env=agent_env(FABRIC_NODE_NAME="cn 42"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "agent: FABRIC_NODE_NAME='cn 42': expected a short host name" in out.stderr


def test_every_central_task_name_in_the_names_module_is_a_registered_task():
    from fabricweb import names

    app.loader.import_default_modules()
    app.autodiscover_tasks(force=True)
    central = [names.DISPATCH, names.EXCLUSIVE, names.ROLLUP, names.PRUNE, names.CHECK_STALE]
    assert [name for name in central if name not in app.tasks] == []
