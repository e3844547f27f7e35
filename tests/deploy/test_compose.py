"""Covers fabricweb/telemetry/management/commands/ingest.py, fabricweb/agent/__main__.py; through them
fabricweb/heap.py.

The shipped docker-compose.yml is valid and wires every role (no engine here: Debian's client validates)."""

from __future__ import annotations

import yaml

from tests.deploy.compose_support import compose


def test_the_compose_file_is_valid_with_its_secrets_set():
    result = compose("config", "-q", env={"SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "pw"})
    assert result.returncode == 0, result.stderr


def test_the_compose_file_refuses_to_start_without_secrets():
    result = compose("config", "-q", env={})
    assert result.returncode != 0
    assert "set POSTGRES_PASSWORD" in result.stderr or "set SECRET_KEY" in result.stderr


def test_every_role_runs_from_the_one_image_and_nodes_get_no_database():
    result = compose(
        "--profile", "node", "--profile", "demo", "config", env={"SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "p"}
    )
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert set(services) == {
        "postgres",
        "redis",
        "migrate",
        "web",
        "beat",
        "ingest",
        "ingest-consumer",
        "alerts",
        "agent",
        "simulator",
        "demo-keys",
        "sim-agent",
        # `config` lists every profile's services; the monitoring ones are tested in test_monitoring_stack.py.
        "prometheus",
        "alertmanager",
        "grafana",
    }
    assert services["ingest"]["command"][:4] == ["celery", "-A", "fabricweb", "worker"]
    assert "ingest" in services["ingest"]["command"]
    # Snapshots go to the batch consumer, which runs like the worker: same image, same environment.
    consumer = services["ingest-consumer"]
    assert consumer["command"] == ["python", "manage.py", "ingest"]
    assert consumer["image"] == services["ingest"]["image"]
    assert consumer["environment"] == services["ingest"]["environment"]
    assert set(consumer["depends_on"]) == {"postgres", "redis", "migrate"}
    # Notifications have a worker of their own, on the alerts queue, with the central environment.
    assert services["alerts"]["command"][:4] == ["celery", "-A", "fabricweb", "worker"]
    assert services["alerts"]["command"][services["alerts"]["command"].index("--queues") + 1] == "alerts"
    assert services["alerts"]["environment"] == services["ingest"]["environment"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "fabricweb", "beat"]
    for node_role in ("agent", "sim-agent"):
        assert services[node_role]["command"] == ["python", "-m", "fabricweb.agent"]
        env = services[node_role]["environment"]
        assert "REDIS_URL" in env
        assert "DATABASE_URL" not in env and "SECRET_KEY" not in env
    assert services["agent"]["volumes"] == ["/sys:/host/sys:ro"]
    assert services["web"]["environment"]["DATABASE_URL"].startswith("postgres://fabric:p@postgres:5432/")


# The shipped Redis itself (its ACL file, who may do what) is tried in test_compose_acl.py.
