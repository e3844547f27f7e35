"""The node agent: which nodes a worker serves, what it reads, and that it runs with no database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.sim import Fabric
from fabricweb.agent import tasks
from fabricweb.agent.__main__ import worker_argv
from fabricweb.celery import app

REPO = Path(__file__).resolve().parents[2]


def route(name: str, **kwargs) -> str:
    return app.amqp.router.route({}, name, args=(), kwargs=kwargs, task_type=app.tasks.get(name))["queue"].name


@pytest.fixture
def sim_dir(tmp_path, settings):
    Fabric.create(str(tmp_path), 3)
    (tmp_path / "not-a-node").mkdir()  # no class/infiniband: not served
    settings.FABRIC_SIM_DIR = str(tmp_path)
    return tmp_path


def test_collect_is_routed_to_the_queue_of_the_node_it_names():
    assert route(tasks.collect.name, node="cn042") == "node.cn042"
    assert route("fabricweb.scheduling.dispatch_collect") == "ingest"
    assert route("fabricweb.scheduling.run_exclusive") == "ingest"


def test_a_sim_worker_serves_every_node_tree_in_its_directory(sim_dir):
    assert tasks.served_nodes() == ["cn001", "cn002", "cn003"]
    assert tasks.sysfs_root("cn002") == os.path.join(sim_dir, "cn002")
    snap = tasks.snapshot("cn002")
    assert snap["host"] == "cn002" and snap["devices"] and not snap["errors"]


def test_a_sim_worker_refuses_names_that_would_leave_its_directory(sim_dir):
    for name in ("../etc", ".hidden", "a/b"):
        with pytest.raises(tasks.NotServed):
            tasks.sysfs_root(name)


def test_a_node_worker_reads_only_its_own_node(settings, tmp_path):
    settings.FABRIC_SIM_DIR = None
    settings.FABRIC_NODE_NAME = "cn042"
    settings.FABRIC_SYSFS_ROOT = str(tmp_path)
    assert tasks.served_nodes() == ["cn042"]
    assert tasks.sysfs_root("cn042") == str(tmp_path)
    with pytest.raises(tasks.NotServed, match="reads cn042, not cn043"):
        tasks.sysfs_root("cn043")


def test_the_agent_worker_consumes_only_its_nodes_queues_one_task_at_a_time():
    argv = worker_argv(["cn001", "cn002"], ["--pool", "prefork"])
    assert argv[argv.index("--queues") + 1] == "node.cn001,node.cn002"
    assert argv[argv.index("--concurrency") + 1] == "1"
    assert argv[-2:] == ["--pool", "prefork"]  # the operator's options come last and win


def test_the_agent_settings_need_no_secret_and_refuse_every_database_use():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DEBUG")}
    env["DJANGO_SETTINGS_MODULE"] = "fabricweb.agent.settings"
    probe = (
        "import django; django.setup()\n"
        "from django.conf import settings; from django.db import connection\n"
        "assert settings.DATABASES == {}\n"
        "try:\n    connection.ensure_connection()\nexcept Exception as e:\n    print(type(e).__name__)\n"
        "try:\n    import fabricweb.inventory.models\nexcept RuntimeError:\n    print('no models')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ImproperlyConfigured", "no", "models"]


def test_the_agent_refuses_to_start_with_no_node_tree_to_serve(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env["FABRIC_SIM_DIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "fabricweb.agent"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert f"no node trees (<name>/class/infiniband) under {tmp_path}" in out.stderr
