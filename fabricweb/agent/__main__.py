"""`python -m fabricweb.agent [celery worker options]`: start the node agent.

Environment (fabricweb/agent/config.py): REDIS_URL (the broker: the only address a node needs),
FABRIC_NODE_NAME (default: the short host name), FABRIC_SYSFS_ROOT (default /sys); or
FABRIC_SIM_DIR=DIR to serve every simulated node tree DIR/<name> from one worker. DATABASE_URL,
SECRET_KEY and DJANGO_SETTINGS_MODULE are neither needed nor read: the agent loads no Django.
"""

from __future__ import annotations

import os
import socket
import sys

from fabricweb.agent.config import AgentConfig, ConfigError
from fabricweb.names import node_queue


def worker_argv(nodes: list[str], extra: list[str], loglevel: str = "INFO") -> list[str]:
    label = nodes[0] if len(nodes) == 1 else f"sim{os.getpid()}.{socket.gethostname().split('.')[0]}"
    return [
        "worker",
        "--queues",
        ",".join(node_queue(n) for n in nodes),
        "--hostname",
        f"node@{label}",
        # One process: the poll runs in the worker (its deadline is fabricweb/agent/poll.py's).
        "--pool",
        "solo",
        # Thousands of node workers on one broker: no worker-to-worker chatter.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        loglevel,
        *extra,
    ]


def main(argv: list[str] | None = None) -> int:
    try:
        config = AgentConfig.from_env()
    except ConfigError as e:
        print(f"agent: {e}", file=sys.stderr)
        return 2
    nodes = config.served_nodes()
    if not nodes:
        print(f"agent: no node trees (<name>/class/infiniband) under {config.sim_dir}", file=sys.stderr)
        return 2
    from fabricweb.agent.app import create_app  # Celery: only once the configuration is sound

    app, _ = create_app(config)
    app.worker_main(worker_argv(nodes, sys.argv[1:] if argv is None else argv, config.log_level))
    return 0


if __name__ == "__main__":
    sys.exit(main())
