"""`python -m fabricweb.agent [-l LEVEL]`: start the node agent.

Environment (fabricweb/agent/config.py): REDIS_URL (the broker: the only address a node needs),
FABRIC_NODE_NAME (default: the short host name), FABRIC_SYSFS_ROOT (default /sys); or
FABRIC_SIM_DIR=DIR to serve every simulated node tree DIR/<name> from one process; FABRIC_NODE_KEY
or FABRIC_NODE_KEY_FILE (the key its snapshots are signed with), FABRIC_REDIS_CA_FILE. DATABASE_URL,
SECRET_KEY and DJANGO_SETTINGS_MODULE are neither needed nor read: the agent loads neither Django nor
Celery (fabricweb/agent/loop.py says why).
"""

from __future__ import annotations

import argparse
import logging
import sys

from fabricweb.agent.config import LOG_LEVELS, AgentConfig, ConfigError

# As a Celery worker's lines read, which the agent's were: a journal's filters and habits carry over.
LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m fabricweb.agent", description="The node agent.")
    p.add_argument("-l", "--loglevel", type=str.upper, choices=LOG_LEVELS, help="log level (default: LOG_LEVEL)")
    return p.parse_args(argv)


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
    logging.basicConfig(level=args.loglevel or config.log_level, format=LOG_FORMAT)
    from fabricweb.agent.loop import PollLoop  # the broker's client: only once the configuration is sound

    return PollLoop(config, nodes).run()


if __name__ == "__main__":
    sys.exit(main())
