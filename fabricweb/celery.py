"""The central Celery app of the project, shared by the ingest worker, beat and the web side.

Configured from the central Django settings (fabricweb.settings). The fabric collector has an app
of its own, without Django (fabricweb/fabricagent/app.py), and the node agent speaks the same messages
from a loop of its own (fabricweb/agent/loop.py); all take queue and task names and the
JSON-only message rules from fabricweb/names.py, applied here after Django's settings so no
environment can loosen them. The periodic schedule is fabricweb/beat.py (names only: the app
imports no task module, and the scheduling tasks import the app).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from celery import Celery

from fabricweb.cappedredis import TRANSPORT as CAPPED_TRANSPORT
from fabricweb.names import (
    ALERTS_QUEUE,
    INGEST_QUEUE,
    MESSAGE_SETTINGS,
    NODE_QUEUE_PREFIX,
    PLAIN_BODIES,
    SNAPSHOT_QUEUE,
    node_queue,
    task_routes,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fabricweb.settings")
# Django's system checks run where a configuration is deployed (`manage.py migrate`, `check --deploy`, the
# compose file's migrate service). Celery would run them again at every worker's and beat's start, and the URL
# checks import the whole URLconf (every view, and numpy through the pages' routes) into processes that serve
# no page. Set CELERY_SKIP_CHECKS to an empty value to have them here too.
os.environ.setdefault("CELERY_SKIP_CHECKS", "true")

__all__ = ["ALERTS_QUEUE", "INGEST_QUEUE", "NODE_QUEUE_PREFIX", "SNAPSHOT_QUEUE", "app", "node_queue"]

# Not an app of the central settings, so not autodiscovered: the scheduling tasks. The node
# agent's `collect` is not registered here: dispatch sends it by name to node.<name>.
app = Celery("fabricweb", include=["fabricweb.scheduling"])
# The broker URL and anything site-wide come from Django settings (CELERY_* names); the
# update below comes after, so what it fixes cannot be loosened there.
app.config_from_object("django.conf:settings", namespace="CELERY")
# Each task's queue is fabricweb/names.py's QUEUE_OF, the routing table of the agent's app too.
app.conf.update(
    MESSAGE_SETTINGS,
    task_routes=task_routes(),
    task_soft_time_limit=60,
    task_time_limit=90,
    broker_transport_options=dict(PLAIN_BODIES),
)
app.autodiscover_tasks()


@app.on_after_configure.connect
def _capped_broker(sender, **kwargs):
    from django.conf import settings

    # Any node can push to the central queues: a Redis broker's messages over the cap are drained unread,
    # logged and dropped (fabricweb/cappedredis.py). A process passing a transport of its own (ingest's
    # consumer) passes its own cap in its transport options.
    if urlsplit(sender.conf.broker_url or "").scheme in ("redis", "rediss"):
        sender.conf.broker_transport = CAPPED_TRANSPORT
        sender.conf.broker_transport_options = {
            **(sender.conf.broker_transport_options or {}),
            "max_message_bytes": settings.FABRIC_TASK_MESSAGE_MAX_BYTES,
        }


@app.on_after_configure.connect
def _beat_schedule(sender, **kwargs):
    from django.conf import settings

    # Settings without a poll interval (a test's, say) run no beat.
    interval = getattr(settings, "FABRIC_POLL_INTERVAL", None)
    if interval:
        from fabricweb.beat import beat_schedule

        sender.conf.beat_schedule = beat_schedule(interval, jobs=getattr(settings, "FABRIC_JOBS", "off") != "off")
