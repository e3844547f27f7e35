"""Django settings of the node agent: the broker and this node's hardware, nothing else.

A compute node never holds database credentials or the site's secret. DATABASES is
empty, so Django's placeholder backend refuses any query, and no app with models is
installed, so a model import fails too: a stray ORM call on a node is an error at once,
never a connection attempt. `python -m fabricweb.agent` selects this module.

The agent is a Django settings module (rather than a Django-free branch in
fabricweb/celery.py) so the one Celery app is configured one way everywhere, and
the strict environment helpers of fabricweb/env.py apply here as well.
"""

from __future__ import annotations

from collectors.facts import NODE_NAME_PATTERN
from fabricweb.env import Env

env = Env()

INSTALLED_APPS = ["fabricweb.agent"]
DATABASES: dict = {}
USE_TZ = True
TIME_ZONE = "UTC"

LOG_LEVEL = env.choice("LOG_LEVEL", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# Queue names are node.<name>, and a simulated node's tree is FABRIC_SIM_DIR/<name>:
# the name must be short and must not be able to climb out of the directory (collectors/facts.py).
# This node's name (default: its short host name, as in its snapshots) and the tree it reads.
FABRIC_NODE_NAME = env.match("FABRIC_NODE_NAME", None, pattern=NODE_NAME_PATTERN, what="a short host name")
FABRIC_SYSFS_ROOT = env.str("FABRIC_SYSFS_ROOT", "/sys")
# One worker for a whole simulated fabric: serve node.<n> for every DIR/<n>, reading DIR/<n>.
FABRIC_SIM_DIR = env.str("FABRIC_SIM_DIR", None)

REDIS_URL = env.url("REDIS_URL", "redis://127.0.0.1:6379/0", schemes=("redis", "rediss", "unix"))
CELERY_BROKER_URL = REDIS_URL
