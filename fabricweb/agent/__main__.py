"""`python -m fabricweb.agent [-I MODULES] [-l LEVEL] [-n HOSTNAME]`: start the node agent.

Environment (fabricweb/agent/config.py): REDIS_URL (the broker: the only address a node needs),
FABRIC_NODE_NAME (default: the short host name), FABRIC_SYSFS_ROOT (default /sys); or
FABRIC_SIM_DIR=DIR to serve every simulated node tree DIR/<name> from one worker; FABRIC_NODE_KEY
or FABRIC_NODE_KEY_FILE (the key its snapshots are signed with), FABRIC_REDIS_CA_FILE. DATABASE_URL,
SECRET_KEY and DJANGO_SETTINGS_MODULE are neither needed nor read: the agent loads no Django.

The Celery worker is started directly, not through the `celery` command line, whose imports
(click, its REPL, prompt_toolkit, pygments) cost a node memory and start-up time for options
an agent does not need; the few it does are the options above.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

from fabricweb.agent.config import LOG_LEVELS, AgentConfig, ConfigError
from fabricweb.names import node_queue


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m fabricweb.agent", description="The node agent (a Celery worker).")
    p.add_argument("-I", "--include", action="append", default=[], help="modules of extra tasks to load (commas)")
    p.add_argument("-l", "--loglevel", type=str.upper, choices=LOG_LEVELS, help="log level (default: LOG_LEVEL)")
    p.add_argument("-n", "--hostname", help="the worker's name (default: node@<node name>)")
    return p.parse_args(argv)


def worker_options(nodes: list[str], args: argparse.Namespace, config: AgentConfig) -> dict:
    """The keyword arguments of app.Worker for an agent serving `nodes`."""
    label = nodes[0] if len(nodes) == 1 else f"sim{os.getpid()}.{socket.gethostname().split('.')[0]}"
    return {
        "hostname": args.hostname or f"node@{label}",
        "queues": [node_queue(n) for n in nodes],
        # One process: the poll runs in the worker itself, under its own deadline (poll.py).
        "pool_cls": "solo",
        "concurrency": 1,
        # Thousands of node workers on one broker: no worker-to-worker chatter.
        "without_gossip": True,
        "without_mingle": True,
        "without_heartbeat": True,
        "loglevel": args.loglevel or config.log_level,
        "include": [m for value in args.include for m in value.split(",") if m],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = AgentConfig.from_env()
    except ConfigError as e:
        print(f"agent: {e}", file=sys.stderr)
        return 2
    nodes = config.served_nodes()
    if not nodes:
        print(f"agent: no node trees (<name>/class/infiniband) under {config.sim_dir}", file=sys.stderr)
        return 2
    try:
        config.check_keys(nodes)
    except ConfigError as e:
        print(f"agent: {e}", file=sys.stderr)
        return 2
    from fabricweb.agent.app import create_app  # Celery: only once the configuration is sound

    app, _ = create_app(config, nodes)
    worker = app.Worker(**worker_options(nodes, args, config))
    worker.start()
    return worker.exitcode or 0


if __name__ == "__main__":
    sys.exit(main())
