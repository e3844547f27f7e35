"""Covers fabricweb/agent/config.py, fabricweb/brokeracl.py, fabricweb/env.py, fabricweb/nodeauth.py,
fabricweb/scheduling.py, fabricweb/identity/management/commands/broker_acl.py; through them
fabricweb/identity/management/nodeargs.py.

The broker as docker-compose.yml ships it: the compose file's own Redis command, run with Debian's
redis-server and the ACL file made the way the compose file's header says (`manage.py broker_acl --central`,
with the central services' own environment), on a private loopback port. No client without a user gets
anything; a node's user takes its own polls and pushes snapshots, nothing else; the central user does what
web, beat, the workers and `manage.py ingest` do, and no administrative command."""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import yaml
from celery import Celery
from django.core.management import CommandError, call_command
from kombu import Connection, Exchange, Queue
from redis.backoff import NoBackoff
from redis.retry import Retry

from fabricweb.agent.config import EnvReader
from fabricweb.brokeracl import node_password
from fabricweb.env import read_secret, url_with_password
from fabricweb.names import (
    ALERTS_QUEUE,
    ALERTS_TICK,
    COLLECT,
    INGEST_QUEUE,
    MESSAGE_SETTINGS,
    PLAIN_BODIES,
    ROLLUP,
    SNAPSHOT_QUEUE,
    node_queue,
    task_routes,
)
from fabricweb.nodeauth import node_key
from fabricweb.scheduling import waiting
from harness import free_port, stop

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
HEADER = [line[1:].strip() for line in (ROOT / "docker-compose.yml").read_text().splitlines() if line.startswith("#")]
SERVICES = COMPOSE["services"]
CENTRAL_ROLES = ("web", "beat", "ingest", "ingest-consumer", "alerts")
REDIS_SERVER = "/usr/bin/redis-server"  # Debian's Redis 7, standing in for the redis:7 image's
NOPERM = redis.exceptions.NoPermissionError
SECRETS_DIR = "${FABRIC_SECRETS_DIR:-./secrets}/"  # where every secret file of the compose file lies


def documented_acl_step() -> tuple[list[str], str]:
    """(the manage.py arguments, the file written) of the header's step that makes the broker's ACL file."""
    [line] = [line for line in HEADER if "broker_acl --central" in line]
    words = shlex.split(line)
    return words[words.index("manage.py") + 1 : words.index(">")], words[words.index(">") + 1]


def secret_file(name: str, secrets_dir: Path) -> Path:
    """Where compose finds secret `name`, with FABRIC_SECRETS_DIR at its default ./secrets moved to `secrets_dir`."""
    path = COMPOSE["secrets"][name]["file"]
    assert path.startswith(SECRETS_DIR), path
    return secrets_dir / path.removeprefix(SECRETS_DIR)


def in_container(value: str, service: str, secrets_dir: Path) -> str:
    """A path as the service sees it (/run/secrets/<name>, one of its secrets) moved to the file here."""
    if not value.startswith("/run/secrets/"):
        return value
    name = value.removeprefix("/run/secrets/")
    assert name in SERVICES[service]["secrets"], f"{service} reads {value} but does not mount secret {name}"
    return str(secret_file(name, secrets_dir))


def made_secrets(directory: Path) -> Path:
    """The central secret files, made as the header says (`openssl rand -hex 32`), in directory/secrets."""
    secrets_dir = directory / "secrets"
    secrets_dir.mkdir()
    for name in ("redis_password", "node_key_secret"):
        secret_file(name, secrets_dir).write_text(secrets.token_hex(32) + "\n")
    return secrets_dir


def central_environment(service: str, secrets_dir: Path) -> dict[str, str]:
    """What a process of `service` runs with, its secrets here: the compose file's variables that need no
    interpolation (the database's and Django's key play no part here: a test key stands in for the latter)."""
    ours = ("DJANGO_", "SECRET", "DATABASE", "REDIS", "FABRIC")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    shipped = {
        name: in_container(value, service, secrets_dir)
        for name, value in SERVICES[service]["environment"].items()
        if "${" not in value
    }
    return {**keep, **shipped, "SECRET_KEY": secrets.token_urlsafe(50)}


@pytest.fixture(scope="module")
def shipped_broker(tmp_path_factory):
    """The compose file's Redis, with the ACL file made as documented: its port, the central URL, the node secret,
    the nodes named. One for the file (each test empties the queues it uses first)."""
    tmp_path = tmp_path_factory.mktemp("shipped-broker")
    if not os.path.exists(REDIS_SERVER):
        if os.environ.get("CI"):
            pytest.fail(f"{REDIS_SERVER} is not installed (scripts/system-packages installs redis-server)")
        pytest.skip(f"{REDIS_SERVER} is not installed")
    secrets_dir = made_secrets(tmp_path)
    # The documented step, in the central services' own environment (web's: every central role has the same).
    arguments, written = documented_acl_step()
    acl = secret_file("redis_acl", secrets_dir)
    assert Path(written) == Path("secrets") / acl.name, "the header writes another file than redis reads"
    central_env = central_environment("web", secrets_dir)
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=central_env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    acl.write_text(done.stdout)

    # The compose file's command for the redis service, its secrets where they are here, a private port and dir.
    command = [in_container(word, "redis", secrets_dir) for word in SERVICES["redis"]["command"]]
    assert command[0] == "redis-server" and str(acl) in command
    port = free_port()
    server = subprocess.Popen(
        [REDIS_SERVER, *command[1:], "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path), "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                refusable(port=port, socket_timeout=1).ping()
                pytest.fail("the shipped Redis answered a client that named no user")
            except redis.AuthenticationError:
                break  # up, and refusing
            except redis.ConnectionError:
                assert server.poll() is None, "redis-server refused the compose command or the ACL file"
                assert time.monotonic() < deadline, "the compose Redis command did not start within 10 s"
                time.sleep(0.05)
        # The central URL as settings builds it: REDIS_URL's user, the password of REDIS_PASSWORD_FILE.
        shipped = urlsplit(central_env["REDIS_URL"])  # redis://central@redis:6379/0: here, on the private port
        here = shipped._replace(netloc=f"{shipped.username}@127.0.0.1:{port}").geturl()
        central_url = url_with_password(here, read_secret("REDIS_PASSWORD", central_env))
        node_secret = read_secret("FABRIC_NODE_KEY_SECRET", central_env)
        nodes = [word for word in arguments if not word.startswith("-")][1:]
        yield {"port": port, "central": central_url, "node_secret": node_secret, "nodes": nodes, "acl": acl}
    finally:
        stop(server)


def refusable(**options) -> redis.Redis:
    """A client that reports a refused login at once: redis-py retries connection errors (refusals among them)."""
    return redis.Redis(retry=Retry(NoBackoff(), 0), **options)


def central_client(broker: dict) -> redis.Redis:
    """The central user's client, the queues the tests use emptied."""
    central = redis.Redis.from_url(broker["central"], socket_timeout=5)
    central.delete(SNAPSHOT_QUEUE, INGEST_QUEUE, ALERTS_QUEUE, *(node_queue(n) for n in broker["nodes"]))
    return central


def as_node(broker: dict, node: str) -> redis.Redis:
    password = node_password(broker["node_secret"], node)
    return redis.Redis.from_url(f"redis://node.{node}:{password}@127.0.0.1:{broker['port']}/0", socket_timeout=5)


def test_the_acl_file_turns_the_default_user_off_and_holds_no_password(shipped_broker):
    text = shipped_broker["acl"].read_text()
    lines = text.splitlines()
    assert lines[0] == "user default reset off"
    assert lines[1].startswith("user central reset on #") and lines[1].endswith("~* &* +@all -@dangerous +info")
    assert [line.split()[1] for line in lines[2:]] == [f"node.{n}" for n in shipped_broker["nodes"]]
    central_password = urlsplit(shipped_broker["central"]).password
    for password in (
        central_password,
        *(node_password(shipped_broker["node_secret"], n) for n in shipped_broker["nodes"]),
    ):
        assert password not in text


def test_a_client_naming_no_user_is_refused_even_with_the_central_password(shipped_broker):
    port, central_password = shipped_broker["port"], urlsplit(shipped_broker["central"]).password
    with pytest.raises(redis.AuthenticationError):
        refusable(port=port, socket_timeout=5).ping()
    # The former shared password, sent as Redis's `default` user: that user is off.
    with pytest.raises(redis.AuthenticationError):
        refusable(port=port, password=central_password, socket_timeout=5).ping()
    with pytest.raises(redis.AuthenticationError):
        refusable(port=port, username="default", password=central_password, socket_timeout=5).ping()


def test_a_node_takes_its_own_polls_and_pushes_snapshots_and_nothing_else(shipped_broker):
    mine, other = shipped_broker["nodes"][:2]
    central = central_client(shipped_broker)
    node = as_node(shipped_broker, mine)
    central.lpush(node_queue(mine), "a poll of mine")
    central.lpush(node_queue(other), "a poll of the other node")

    assert node.brpop([node_queue(mine)], timeout=1) == (node_queue(mine).encode(), b"a poll of mine")
    assert node.lpush(SNAPSHOT_QUEUE, "my snapshot") == 1
    refused = {
        "another node's polls": lambda: node.brpop([node_queue(other)], timeout=1),
        "pushing to the central queue (LPUSH)": lambda: node.lpush(INGEST_QUEUE, "forged"),
        "pushing to the central queue (RPUSH)": lambda: node.rpush(INGEST_QUEUE, "forged"),
        "pushing to the alerts queue": lambda: node.lpush(ALERTS_QUEUE, "forged"),
        "taking the snapshots": lambda: node.brpop([SNAPSHOT_QUEUE], timeout=1),
        "FLUSHALL": lambda: node.flushall(),
    }
    for what, attempt in refused.items():
        with pytest.raises(NOPERM):
            attempt()
            pytest.fail(f"the node's user was allowed: {what}")
    assert central.llen(node_queue(other)) == 1
    assert central.llen(INGEST_QUEUE) == 0 and central.llen(ALERTS_QUEUE) == 0
    assert central.lrange(SNAPSHOT_QUEUE, 0, -1) == [b"my snapshot"]
    # Another node's password does not open this node's user.
    with pytest.raises(redis.AuthenticationError):
        refusable(
            port=shipped_broker["port"],
            username=f"node.{mine}",
            password=node_password(shipped_broker["node_secret"], other),
            socket_timeout=5,
        ).ping()


def test_the_central_user_does_what_the_central_roles_do_and_no_admin_command(shipped_broker):
    """Beat and the workers' messages (Celery, kombu), dispatch's queue lengths and locks, the consumer's reads."""
    url, mine = shipped_broker["central"], shipped_broker["nodes"][0]
    central = central_client(shipped_broker)
    # `manage.py ingest` declares the snapshots queue before the nodes send; a node's snapshot arrives.
    with Connection(url) as conn:
        Queue(SNAPSHOT_QUEUE, Exchange(SNAPSHOT_QUEUE, "direct"), routing_key=SNAPSHOT_QUEUE)(
            conn.default_channel
        ).declare()
    as_node(shipped_broker, mine).lpush(SNAPSHOT_QUEUE, "a snapshot")
    assert central.brpop([SNAPSHOT_QUEUE], timeout=1) == (SNAPSHOT_QUEUE.encode(), b"a snapshot")
    # Beat: a poll to a node's queue and the central jobs, routed as the project routes them.
    beat = Celery("central-acl", broker=url, set_as_current=False)
    beat.conf.update(MESSAGE_SETTINGS, task_routes=task_routes(), broker_transport_options=dict(PLAIN_BODIES))
    try:
        beat.send_task(COLLECT, kwargs={"node": mine}, queue=node_queue(mine))
        beat.send_task(ROLLUP)
        beat.send_task(ALERTS_TICK)
    finally:
        beat.close()
    assert waiting([node_queue(mine), INGEST_QUEUE, ALERTS_QUEUE, "node.nobody"], central) == {
        node_queue(mine),
        INGEST_QUEUE,
        ALERTS_QUEUE,
    }
    # The workers take their queues; a scheduling lock is taken and released (SET NX, a Lua release).
    assert central.brpop([INGEST_QUEUE], timeout=1)[0] == INGEST_QUEUE.encode()
    assert central.brpop([ALERTS_QUEUE], timeout=1)[0] == ALERTS_QUEUE.encode()
    lock = central.lock("fabricweb:lock:acl-test", timeout=5)
    assert lock.acquire(blocking=False) is True
    lock.release()
    for what, attempt in {
        "FLUSHALL": lambda: central.flushall(),
        "CONFIG": lambda: central.config_get("*"),
        "ACL": lambda: central.acl_list(),
        "KEYS": lambda: central.keys("*"),
        "SHUTDOWN": lambda: central.shutdown(nosave=True),
    }.items():
        with pytest.raises(NOPERM):
            attempt()
            pytest.fail(f"the central user was allowed: {what}")
    assert central.llen(node_queue(mine)) == 1


def test_central_roles_get_the_central_user_and_node_auth_and_nodes_get_only_their_own_credentials():
    for role in CENTRAL_ROLES:
        env = SERVICES[role]["environment"]
        assert urlsplit(env["REDIS_URL"]).username == "central", role
        assert env["REDIS_PASSWORD_FILE"] == "/run/secrets/redis_password", role
        assert env["FABRIC_NODE_AUTH"] == "required", role
        assert env["FABRIC_NODE_KEY_SECRET_FILE"] == "/run/secrets/node_key_secret", role
        assert {"redis_password", "node_key_secret"} <= set(SERVICES[role]["secrets"]), role
    agent = SERVICES["agent"]
    assert agent["environment"]["REDIS_PASSWORD_FILE"] == "/run/secrets/node_redis_password"
    assert agent["environment"]["FABRIC_NODE_KEY_FILE"] == "/run/secrets/node_key"
    assert set(agent["secrets"]) == {"node_redis_password", "node_key"}
    # A compute node holds nothing central: not the node secret, not the central password, not the ACL file.
    for node_role in ("agent", "sim-agent"):
        env = SERVICES[node_role]["environment"]
        assert not any(name.startswith("FABRIC_NODE_KEY_SECRET") for name in env), node_role
        assert "node_key_secret" not in SERVICES[node_role].get("secrets", []), node_role
    # The demo's agent signs with the keys demo-keys derives for the simulator's nodes.
    assert SERVICES["sim-agent"]["environment"]["FABRIC_NODE_KEY_FILE"] == "/sim/node-keys.json"
    simulated = int(re.search(r"--nodes\D+(\d+)", " ".join(SERVICES["simulator"]["command"])).group(1))
    assert f"seq -f cn%03g 1 {simulated}" in " ".join(SERVICES["demo-keys"]["command"])


def test_the_compose_file_is_valid_with_its_variables_set():
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose is not installed")
    keep = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_URL")}
    for profiles in ([], ["--profile", "node", "--profile", "demo"]):
        done = subprocess.run(
            [binary, "-f", str(ROOT / "docker-compose.yml"), *profiles, "config", "-q"],
            env={**keep, "SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "p"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "not set" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("redis://:pw@redis:6379/0", "names no user"),
        ("redis://central@redis:6379/0", "the central user has no password"),
        ("redis://default:pw@redis:6379/0", "cannot be the central user"),
        ("redis://node.cn001:pw@redis:6379/0", "cannot be the central user"),
        ("redis://fabric.sm01:pw@redis:6379/0", "cannot be the central user"),
    ],
)
def test_broker_acl_central_refuses_a_central_user_it_cannot_write(settings, url, words):
    settings.REDIS_URL = url
    with pytest.raises(CommandError, match=words):
        call_command("broker_acl", "--central", stdout=io.StringIO())


def test_broker_acl_central_alone_writes_default_off_and_the_central_user(settings):
    settings.REDIS_URL = "redis://central:p%40ss@redis:6379/0"  # as settings puts a password in: quoted
    out = io.StringIO()
    call_command("broker_acl", "--central", stdout=out)
    digest = hashlib.sha256(b"p@ss").hexdigest()
    assert out.getvalue().splitlines() == [
        "user default reset off",
        f"user central reset on #{digest} ~* &* +@all -@dangerous +info",
    ]
    with pytest.raises(CommandError, match="give one"):
        call_command("broker_acl", "--central", "--passwords", "cn001", stdout=io.StringIO())


def test_the_demo_keys_job_gives_every_simulated_node_the_key_ingest_checks(tmp_path):
    """demo-keys' own command (compose's `$$` is `$`, the sim volume here), then the agent's reading of its file."""
    secrets_dir = made_secrets(tmp_path)
    sim = tmp_path / "sim"
    sim.mkdir()
    shell, flag, script = SERVICES["demo-keys"]["command"]
    script = script.replace("$$", "$").replace("/sim/", f"{sim}/").replace("python ", f"{sys.executable} ")
    env = central_environment("demo-keys", secrets_dir)
    done = subprocess.run([shell, flag, script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    keys_file = SERVICES["sim-agent"]["environment"]["FABRIC_NODE_KEY_FILE"].replace("/sim/", f"{sim}/")
    keys = EnvReader({"FABRIC_NODE_KEY_FILE": keys_file}).node_keys("cn001", several=True)
    simulated = int(re.search(r"--nodes\D+(\d+)", " ".join(SERVICES["simulator"]["command"])).group(1))
    assert sorted(keys) == [f"cn{i:03d}" for i in range(1, simulated + 1)]
    secret = read_secret("FABRIC_NODE_KEY_SECRET", env)
    assert all(key == node_key(secret, node) for node, key in keys.items())
    assert oct(os.stat(keys_file).st_mode & 0o777) == "0o600"  # umask 077: the fabric user's alone
