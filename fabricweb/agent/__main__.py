"""`python -m fabricweb.agent [celery worker options]`: start the node agent.

Environment: REDIS_URL (the broker: the only address a node needs), FABRIC_NODE_NAME
(default: the short host name), FABRIC_SYSFS_ROOT (default /sys); or FABRIC_SIM_DIR=DIR
to serve every simulated node tree DIR/<name> from one worker. DATABASE_URL and
SECRET_KEY are neither needed nor read: the agent has settings of its own.
"""

from __future__ import annotations

import os
import socket
import sys

AGENT_SETTINGS = "fabricweb.agent.settings"


def worker_argv(nodes: list[str], extra: list[str], loglevel: str = "INFO") -> list[str]:
    from fabricweb.celery import node_queue

    label = nodes[0] if len(nodes) == 1 else f"sim{os.getpid()}.{socket.gethostname().split('.')[0]}"
    return [
        "worker",
        "--queues",
        ",".join(node_queue(n) for n in nodes),
        "--hostname",
        f"node@{label}",
        # One poll at a time is all a node needs; prefork (not solo) so the time limits hold.
        "--concurrency",
        "1",
        # Thousands of node workers on one broker: no worker-to-worker chatter.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        loglevel,
        *extra,
    ]


def main(argv: list[str] | None = None) -> int:
    # Forced, not defaulted: a node's environment may carry the central settings' name.
    os.environ["DJANGO_SETTINGS_MODULE"] = AGENT_SETTINGS
    from django.conf import settings

    from fabricweb.agent.tasks import served_nodes
    from fabricweb.celery import app

    nodes = served_nodes()
    if not nodes:
        where = os.environ.get("FABRIC_SIM_DIR")
        print(f"agent: no node trees (<name>/class/infiniband) under {where}", file=sys.stderr)
        return 2
    app.worker_main(worker_argv(nodes, sys.argv[1:] if argv is None else argv, settings.LOG_LEVEL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
