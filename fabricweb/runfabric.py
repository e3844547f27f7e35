"""Run a whole fabric on one machine: `python -m fabricweb.runfabric --sim-dir DIR [options]`.

Starts, in order: the database migrations (and waits for them), optionally a private
redis-server, the simulator writing DIR/<node>/class/infiniband/... (unless --no-sim:
then any trees of that layout are read, whoever writes them), the ingest consumer
(`manage.py ingest`: snapshots, in batches), the ingest worker (Celery: rollups, prune,
stale checks, dispatch), the alerts worker (Celery: notifications), celery beat, one node
agent serving every tree in DIR, and with --web Django's development server.
Each child runs in a process group of its own; Ctrl-C or SIGTERM stops every group,
and if any child exits on its own the rest are stopped and the exit status is 1.

Central processes get the environment as it is (DATABASE_URL, SECRET_KEY or DEBUG=1,
REDIS_URL) with FABRIC_POLL_INTERVAL set to --interval; the node agent gets no
DATABASE_URL, no SECRET_KEY and no FABRIC_NODE_KEY_SECRET, as on a real compute node.
Nodes are authenticated as on a real site: with FABRIC_NODE_KEY_SECRET from the environment,
or one made up for this run, every node's key is derived as `manage.py node_key` derives it
and handed to its agent in a key file (FABRIC_NODE_KEY_FILE), and ingest refuses unsigned
snapshots (FABRIC_NODE_AUTH required, unless the environment says off).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fabricweb.env import Env, redact_url
from fabricweb.nodeauth import node_key

BASE_DIR = Path(__file__).resolve().parent.parent
PY, MANAGE = sys.executable, str(BASE_DIR / "manage.py")
CELERY = [PY, "-m", "celery", "-A", "fabricweb"]
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
STOP_GRACE_S = 10.0
START_TIMEOUT_S = 30.0
AGENT_STOPS_AFTER_S = 30.0  # --agent-stops: a Celery worker needs seconds to start on a busy machine
CENTRAL_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")
# Neither the site's node-key secret (nor a key given to this process) nor the site's secret key, from a file either.
# REDIS_PASSWORD(_FILE) goes through: the agent reads it as the central side does.
AGENT_NEVER = ("FABRIC_NODE_KEY", "SECRET_KEY_FILE", "DATABASE_URL_FILE")


def say(message: str) -> None:
    print(f"runfabric: {message}", file=sys.stderr, flush=True)


class Stopped(Exception):
    """Ctrl-C or SIGTERM arrived while starting up."""


@dataclass
class Child:
    name: str
    proc: subprocess.Popen


class Children:
    """The processes started, each the leader of its own process group (so its own children go with it)."""

    def __init__(self) -> None:
        self.children: list[Child] = []
        self.stop_requested = False

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        try:
            proc = subprocess.Popen(argv, env=env, cwd=BASE_DIR, stdin=subprocess.DEVNULL, process_group=0)
        except OSError as e:
            raise SystemExit(f"cannot start the {name}: {e}") from None
        self.children.append(Child(name, proc))

    def exited(self) -> Child | None:
        return next((c for c in self.children if c.proc.poll() is not None), None)

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = START_TIMEOUT_S) -> None:
        """Wait until `ready()`, giving up if asked to stop, if a child dies, or after `timeout`."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.stop_requested:
                raise Stopped
            dead = self.exited()
            if dead is not None:
                raise SystemExit(f"the {dead.name} exited with status {dead.proc.returncode} before {what}")
            if time.monotonic() > deadline:
                raise SystemExit(f"no {what} after {timeout:g} s")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM to every group, SIGKILL to any still there after the grace period."""
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self.children:
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"the {child.name} did not stop in {STOP_GRACE_S:g} s; killing it")
        # A leader that stopped may leave members behind (pool processes): kill what is left of each group.
        self._signal_all(signal.SIGKILL)
        for child in self.children:
            child.proc.wait()

    def stop_one(self, name: str) -> None:
        """Stop one child (and its group) on purpose: it is no longer watched."""
        child = next(c for c in self.children if c.name == name)
        self.children.remove(child)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGTERM)
        try:
            child.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            say(f"the {name} did not stop in {STOP_GRACE_S:g} s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait()

    def _signal_all(self, sig: int) -> None:
        for child in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, sig)


def node_trees(sim_dir: Path) -> list[str]:
    if not sim_dir.is_dir():
        return []
    return sorted(p.name for p in sim_dir.iterdir() if (p / "class" / "infiniband").is_dir())


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


def start_private_redis(children: Children, env: dict[str, str]) -> None:
    with socket.socket() as s:  # a free port; the tiny race with another binder is acceptable for a demo
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    children.start("redis-server", [*argv, "--loglevel", "warning"], env)
    children.wait_for("answer from redis-server", lambda: redis_answers(env["REDIS_URL"]), 10)


def start_fabric(
    args: argparse.Namespace, children: Children, env: dict[str, str], state_dir: str, secret: str
) -> None:
    """Everything but the database and Redis: simulator, ingest consumer and worker, beat, node agent, web."""
    sim_dir, interval = args.sim_dir, env["FABRIC_POLL_INTERVAL"]
    if not args.no_sim:
        simulate = ["-m", "collectors", "simulate", "--out", str(sim_dir), "--nodes", str(args.nodes)]
        simulate += [f"--fault={spec}" for spec in args.fault]
        children.start("simulator", [PY, *simulate, "--interval", interval], env)
    want = 1 if args.no_sim else args.nodes
    children.wait_for(f"node trees under {sim_dir}", lambda: len(node_trees(sim_dir)) >= want)

    children.start("ingest consumer", [PY, MANAGE, "ingest"], env)
    quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", args.log_level]
    ingest = ["worker", "-Q", "ingest", "-n", "ingest@%h", "-c", str(args.ingest_concurrency), *quiet]
    children.start("ingest worker", [*CELERY, *ingest], env)
    alerts = ["worker", "-Q", "alerts", "-n", "alerts@%h", "-c", "1", *quiet]
    children.start("alerts worker", [*CELERY, *alerts], env)
    beat = ["beat", "-s", os.path.join(state_dir, "beat-schedule"), "--loglevel", args.log_level]
    children.start("beat", [*CELERY, *beat], env)
    agent_env = {k: v for k, v in env.items() if k not in CENTRAL_ONLY and not k.startswith(AGENT_NEVER)}
    served = str(sim_dir)
    keys = node_keys_file(secret, node_trees(sim_dir), state_dir)
    if args.agent_stops:
        served = trees_without(sim_dir, args.agent_stops, state_dir)
        own = {**agent_env, "FABRIC_NODE_NAME": args.agent_stops, "FABRIC_SYSFS_ROOT": str(sim_dir / args.agent_stops)}
        own["FABRIC_NODE_KEY"] = node_key(secret, args.agent_stops)
        children.start(f"node agent of {args.agent_stops}", [PY, "-m", "fabricweb.agent"], own)
    agent_env.update(FABRIC_SIM_DIR=served, FABRIC_NODE_KEY_FILE=keys)
    children.start("node agent", [PY, "-m", "fabricweb.agent"], agent_env)
    if args.web:
        children.start("web server", [PY, MANAGE, "runserver", "--noreload", args.web], env)


def node_keys_file(secret: str, nodes: list[str], state_dir: str) -> str:
    """The keys of `nodes` ({node: key}, as `manage.py node_key --json` prints them), readable by this user only."""
    path = os.path.join(state_dir, "node-keys.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({n: node_key(secret, n) for n in nodes}, f)
    return path


def trees_without(sim_dir: Path, node: str, state_dir: str) -> str:
    """A directory of links to every node tree but `node`'s: the shared agent serves those, `node` has its own."""
    if node not in node_trees(sim_dir):
        raise SystemExit(f"--agent-stops: no node tree {node} under {sim_dir}")
    view = Path(state_dir) / "agent-trees"
    view.mkdir()
    for name in node_trees(sim_dir):
        if name != node:
            (view / name).symlink_to(sim_dir / name)
    return str(view)


def run(args: argparse.Namespace, children: Children, state_dir: str) -> int:
    env = {**os.environ, "FABRIC_POLL_INTERVAL": f"{poll_interval(args):g}", "LOG_LEVEL": args.log_level}
    node_secret = Env(env).secret("FABRIC_NODE_KEY_SECRET", None)
    if node_secret is None:
        # A secret of this run only: the nodes' keys are derived from it and handed out below.
        node_secret = env["FABRIC_NODE_KEY_SECRET"] = secrets.token_hex(32)
    say("migrating the database")
    if subprocess.run([PY, MANAGE, "migrate", "--noinput"], env=env, cwd=BASE_DIR).returncode:
        raise SystemExit("migrate failed")
    if children.stop_requested:
        raise Stopped
    if args.start_redis:
        start_private_redis(children, env)
    start_fabric(args, children, env, state_dir, node_secret)

    nodes, sim = node_trees(args.sim_dir), "" if args.no_sim else " (simulated)"
    say(f"{len(nodes)} nodes under {args.sim_dir}{sim}, polled every {env['FABRIC_POLL_INTERVAL']} s")
    say(f"broker {redact_url(env.get('REDIS_URL', DEFAULT_REDIS_URL))}")
    say(f"node auth {env.get('FABRIC_NODE_AUTH', 'required')}: each node signs with its key (FABRIC_NODE_KEY_FILE)")
    say(f"database {redact_url(env.get('DATABASE_URL', 'var/fabricweb.sqlite3 (the default)'))}")
    if not args.no_sim:
        device = sorted(os.listdir(args.sim_dir / nodes[0] / "class" / "infiniband"))[0]
        say(f"add a fault: {PY} -m collectors fault --out {args.sim_dir} add {nodes[0]}/{device}/1:speed=QDR")
    if args.web:
        say(f"web: http://{args.web}/")
    say("Ctrl-C stops everything")

    # --agent-stops: the node's own agent runs long enough to start, register and report, then stops.
    running_for = max(AGENT_STOPS_AFTER_S, 3 * float(env["FABRIC_POLL_INTERVAL"]))
    stop_agent_at = time.monotonic() + running_for if args.agent_stops else None
    while not children.stop_requested:
        if stop_agent_at is not None and time.monotonic() >= stop_agent_at:
            children.stop_one(f"node agent of {args.agent_stops}")
            say(f"the agent of {args.agent_stops} has stopped (a demo fault): the node turns stale after 3 polls")
            stop_agent_at = None
        dead = children.exited()
        if dead is not None:
            say(f"the {dead.name} exited with status {dead.proc.returncode}; stopping the rest")
            return 1
        time.sleep(0.2)
    return 0


def poll_interval(args: argparse.Namespace) -> float:
    if args.interval is None:
        return Env().seconds("FABRIC_POLL_INTERVAL", 10.0)
    if not args.interval > 0:
        raise SystemExit("--interval must be more than 0")
    return args.interval


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m fabricweb.runfabric", description=__doc__.split("\n\n")[0])
    p.add_argument("--sim-dir", required=True, type=Path, metavar="DIR", help="node trees: DIR/<node>/class/infiniband")
    p.add_argument("--nodes", type=int, default=8, metavar="N", help="simulated nodes (default 8)")
    p.add_argument("--interval", type=float, metavar="S", help="poll interval (default: FABRIC_POLL_INTERVAL or 10)")
    p.add_argument("--no-sim", action="store_true", help="read the trees in DIR as they are; start no simulator")
    p.add_argument("--web", nargs="?", const="127.0.0.1:8000", metavar="ADDR", help="also run manage.py runserver")
    p.add_argument("--start-redis", action="store_true", help="start a private redis-server instead of REDIS_URL's")
    p.add_argument(
        "--fault", action="append", default=[], metavar="SPEC", help="a simulator fault from the start (repeatable)"
    )
    p.add_argument(
        "--agent-stops",
        metavar="NODE",
        help="NODE gets an agent of its own, stopped after 30 s or 3 polls (NODE turns stale)",
    )
    p.add_argument(
        "--ingest-concurrency",
        type=int,
        default=1,
        metavar="C",
        help="Celery ingest worker processes (rollups, prune, checks; default 1)",
    )
    p.add_argument(
        "--log-level",
        default="WARNING",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="of every process (default WARNING: INFO logs every task)",
    )
    args = p.parse_args(argv)
    args.sim_dir = args.sim_dir.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    children = Children()

    def request_stop(signum, frame) -> None:
        children.stop_requested = True

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, request_stop)
    with tempfile.TemporaryDirectory(prefix="fabricweb-run-") as state_dir:
        try:
            status = run(args, children, state_dir)
        except Stopped:
            status = 0
        except SystemExit as e:
            if isinstance(e.code, str):
                say(e.code)
            status = e.code if isinstance(e.code, int) else 1
        finally:
            if children.children:
                say("stopping")
                children.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
