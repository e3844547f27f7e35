"""Loaded into a node agent under test (`python -m fabricweb.agent -I e2e_probe`): what the running agent holds.

Not a test module. The task reports what it found to a Redis list, since workers store no results.
"""

from __future__ import annotations

import json
import os
import sys

import redis
from celery import current_app, shared_task

PROBE = "tests.e2e.probe_database"


@shared_task(name=PROBE)
def probe_database(report_to: str) -> None:
    seen = {
        "settings": os.environ.get("DJANGO_SETTINGS_MODULE"),
        "env": sorted(os.environ),
        "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("django", "fabricweb", "collectors")),
    }
    try:  # last: a failed import may leave parts of Django loaded
        from fabricweb.inventory.models import Node

        seen["models"] = f"imported {Node.__name__}"
    except Exception as e:
        seen["models"] = f"{type(e).__name__}: {e}"
    redis.Redis.from_url(current_app.conf.broker_url).rpush(report_to, json.dumps(seen))
