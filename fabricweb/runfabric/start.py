"""What runfabric starts after the database: a private redis-server if asked, the simulator, the ingest
consumer, the Celery workers and beat, the node agents (with their keys, never the central secrets),
ibsim's side (ibsim.py) and the web server."""

from __future__ import annotations

import argparse
import json
import os
import socket
from pathlib import Path

from fabricweb.env import Env
from fabricweb.names import ALERTS_QUEUE, INGEST_QUEUE
from fabricweb.nodeauth import node_key

from .children import BASE_DIR, PY, Children
from .ibsim import collectors, make_fifo, start_ibsim

MANAGE = str(BASE_DIR / "manage.py")
CELERY = [PY, "-m", "celery", "-A", "fabricweb"]
CENTRAL_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")
# Neither the site's node-key secret (nor a key given to this process) nor the site's secret key, from a file either.
# REDIS_PASSWORD(_FILE) goes through: the agent reads it as the central side does.
AGENT_NEVER = ("FABRIC_NODE_KEY", "SECRET_KEY_FILE", "DATABASE_URL_FILE")


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
        if args.fabric:
            simulate += ["--fabric", "--ibsim-ctl", f"{args.ibsim_net}.ctl"]
            make_fifo(Path(f"{args.ibsim_net}.ctl"))
        children.start("simulator", [PY, *simulate, "--interval", interval], env)
    # With --no-sim: what DIR holds, at least one tree; with an ibsim fabric too, any number, none included (a
    # fabric whose hosts run no agent, storage or gateways, or a site starting with the fabric collector alone).
    want = (0 if args.ibsim_net is not None else 1) if args.no_sim else args.nodes
    if want:
        children.wait_for(f"node trees under {sim_dir}", lambda: len(node_trees(sim_dir)) >= want)
    if args.ibsim_net is not None:
        children.wait_for(f"the fabric {args.ibsim_net}", args.ibsim_net.is_file)
        # The run's collectors are known to ingest as a site's are: named in FABRIC_COLLECTORS (docs/fabric.md).
        known = Env(env).list("FABRIC_COLLECTORS", [])
        env["FABRIC_COLLECTORS"] = ",".join([*known, *(n for _, n in collectors(args) if n not in known)])

    children.start("ingest consumer", [PY, MANAGE, "ingest"], env)
    quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", args.log_level]
    ingest = ["worker", "-Q", INGEST_QUEUE, "-n", "ingest@%h", "-c", str(args.ingest_concurrency), *quiet]
    children.start("ingest worker", [*CELERY, *ingest], env)
    alerts = ["worker", "-Q", ALERTS_QUEUE, "-n", "alerts@%h", "-c", "1", *quiet]
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
    if node_trees(sim_dir):  # (none: the fabric collector alone reports, below)
        children.start("node agent", [PY, "-m", "fabricweb.agent"], agent_env)
    if args.ibsim_net is not None:
        start_ibsim(args, children, {k: v for k, v in agent_env.items() if not k.startswith("FABRIC_NODE_KEY")},
                    state_dir, secret)  # fmt: skip
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
