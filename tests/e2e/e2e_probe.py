"""Loaded into a node agent under test (`python -m fabricweb.agent -I tests.e2e.e2e_probe`): tries the database there.

Not a test module. The task reports what happened to a Redis list, since workers store no results.
"""

from __future__ import annotations

import json
import os

import redis
from celery import shared_task

PROBE = "tests.e2e.probe_database"


@shared_task(name=PROBE)
def probe_database(report_to: str) -> None:
    from django.db import connection

    from fabricweb.celery import app

    seen = {"settings": os.environ.get("DJANGO_SETTINGS_MODULE"), "env": sorted(os.environ)}
    try:
        connection.ensure_connection()
        seen["connect"] = "connected"
    except Exception as e:
        seen["connect"] = f"{type(e).__name__}: {e}"
    try:
        from fabricweb.inventory.models import Node

        seen["models"] = f"imported {Node.__name__}"
    except Exception as e:
        seen["models"] = f"{type(e).__name__}: {e}"
    redis.Redis.from_url(app.conf.broker_url).rpush(report_to, json.dumps(seen))
