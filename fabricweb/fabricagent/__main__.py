"""`python -m fabricweb.fabricagent [-l LEVEL] [-n HOSTNAME]`: start the fabric collector.

Environment (fabricweb/fabricagent/config.py): REDIS_URL, FABRIC_COLLECTOR_NAME (default
fabric-<host name>), FABRIC_COLLECTOR_KEY or FABRIC_COLLECTOR_KEY_FILE, FABRIC_UMAD_CA and
FABRIC_UMAD_PORT (the local port to send from), FABRIC_SWEEP_WINDOW, FABRIC_SWEEP_TIMEOUT_MS,
FABRIC_SWEEP_RETRIES, FABRIC_SWEEP_DEADLINE, FABRIC_FULL_SWEEP_EVERY, FABRIC_ROUTES_INTERVAL,
FABRIC_REDIS_CA_FILE.
It needs read-write access to /dev/infiniband/umad* (docs/fabric.md), no database, no Django.
"""

from __future__ import annotations

import argparse
import sys

from fabricweb import heap
from fabricweb.agent.config import LOG_LEVELS

from .config import ConfigError, FabricAgentConfig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fabricweb.fabricagent", description="The fabric collector.")
    p.add_argument("-l", "--loglevel", type=str.upper, choices=LOG_LEVELS, help="log level (default: LOG_LEVEL)")
    p.add_argument("-n", "--hostname", help="the worker's name (default: fabric@<collector name>)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = FabricAgentConfig.from_env()
    except ConfigError as e:
        print(f"fabricagent: {e}", file=sys.stderr)
        return 2
    from .app import create_app  # Celery: only once the configuration is sound

    app, _ = create_app(config)
    # Its last discovery (every node and port of the fabric) lives for the process's life: collected as
    # the ingest consumer collects its heap (fabricweb/heap.py; 20% faster sweeps, BENCHMARKS.md).
    heap.settle()
    worker = app.Worker(
        hostname=args.hostname or f"fabric@{config.collector}",
        queues=[q.name for q in app.conf.task_queues],
        # One process: the sweep runs in the worker itself, under its own deadline.
        pool_cls="solo",
        concurrency=1,
        # No worker-to-worker chatter on a broker that thousands of node agents share.
        without_gossip=True,
        without_mingle=True,
        without_heartbeat=True,
        loglevel=args.loglevel or config.log_level,
    )
    worker.start()
    return worker.exitcode or 0


if __name__ == "__main__":
    sys.exit(main())
