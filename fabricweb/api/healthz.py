"""GET /healthz: is this deployment alive? Database, broker (and its memory: degraded from 80 % of its
maxmemory, fabricweb/brokermemory.py), the age of the last ingest, hosts refused over
their budget and the notification channels.

No login: load balancers and probes call it. It names what failed but never the
details (hosts, errors with credentials), which go to the log. Every check has a short
timeout: a probe that hangs is worse than one that fails.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from fabricweb import brokermemory
from fabricweb.health.records.freshness import stale_after
from fabricweb.inventory.models import Node

from .http import READ_METHODS, json_response, method_not_allowed
from .serializers import iso

log = logging.getLogger(__name__)

BROKER_TIMEOUT_S = 1.0
OK, ERROR, STALE, NO_DATA, NOT_CHECKED = "ok", "error", "stale", "no data", "not checked"
DEGRADED = "degraded"
HEALTHY = {OK, NO_DATA, NOT_CHECKED}  # a fresh install has no nodes yet; that is not an outage


def check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as e:
        log.warning("healthz: database unreachable: %s", e)
        return {"status": ERROR, "error": f"database unreachable ({type(e).__name__})"}
    return {"status": OK}


def check_broker(url: str) -> dict:
    if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
        return {"status": NOT_CHECKED, "detail": "the broker is not Redis"}
    client = redis.Redis.from_url(
        url,
        socket_connect_timeout=BROKER_TIMEOUT_S,
        socket_timeout=BROKER_TIMEOUT_S,
        **settings.REDIS_CLIENT_OPTIONS,
    )
    try:
        client.ping()
    except redis.TimeoutError as e:
        log.warning("healthz: broker timed out: %s", e)
        return {"status": ERROR, "error": f"broker did not answer PING within {BROKER_TIMEOUT_S:g} s"}
    except redis.RedisError as e:
        log.warning("healthz: broker unreachable: %s", e)
        return {"status": ERROR, "error": f"broker unreachable ({type(e).__name__})"}
    finally:
        client.close()
    memory = brokermemory.read_url(url, settings.REDIS_CLIENT_OPTIONS)
    if memory is None:
        return {"status": OK}
    return {
        "status": DEGRADED if memory.high else OK,
        "used_memory_bytes": memory.used_bytes,
        "maxmemory_bytes": memory.max_bytes,
        "detail": memory.summary(),
    }


def check_ingest() -> dict:
    limit = stale_after().total_seconds()
    try:
        newest = Node.objects.aggregate(newest=Max("last_ingested_at"))["newest"]
    except DatabaseError:
        return {"status": ERROR, "error": "database unreachable", "threshold_s": limit}
    if newest is None:
        return {"status": NO_DATA, "last_ingested_at": None, "age_s": None, "threshold_s": limit}
    age = (timezone.now() - newest).total_seconds()
    return {
        "status": OK if age < limit else STALE,
        "last_ingested_at": iso(newest),
        "age_s": round(age, 3),
        "threshold_s": limit,
    }


REFUSED_LISTED = 20  # nodes named in the answer; the count covers them all


def check_refused() -> dict:
    """Degraded while some host's snapshots are refused over its budget (telemetry/storage/budget.py): a rogue
    or broken node, named with the reason, that the rest of the fabric is monitored without."""
    try:
        refused = Node.objects.exclude(refused_reason="").order_by("-refused_at", "name")
        count = refused.count()
        listed = list(refused.values_list("name", "refused_reason", "refused_at", "refused_snapshots")[:REFUSED_LISTED])
    except DatabaseError:
        return {"status": ERROR, "error": "database unreachable"}
    nodes = [{"node": n, "reason": why, "refused_at": iso(at), "refused_snapshots": k} for n, why, at, k in listed]
    return {"status": DEGRADED if count else OK, "count": count, "nodes": nodes}


def check_held() -> dict:
    """Degraded while a fabric collector's sweeps are held for an operator (fabricweb/fabric/growth.py): the
    switches it found are not in the fabric view until someone accepts them on its page."""
    try:
        held = Node.objects.filter(kind=Node.Kind.COLLECTOR, norm_hold_since__isnull=False).order_by("name")
        listed = list(held.values_list("name", "norm_hold_reason", "norm_hold_since")[:REFUSED_LISTED])
    except DatabaseError:
        return {"status": ERROR, "error": "database unreachable"}
    collectors = [{"collector": n, "reason": why, "since": iso(at)} for n, why, at in listed]
    return {"status": DEGRADED if collectors else OK, "collectors": collectors}


def check_notifications() -> dict:
    """Degraded (not failing: the monitor still monitors) when a channel has a permanent failure."""
    from fabricweb.alerts.status import channel_problems

    try:
        problems = channel_problems()
    except DatabaseError:
        return {"status": ERROR, "error": "database unreachable"}
    failed = [p.channel for p in problems if p.state == "failed"]
    retrying = [p.channel for p in problems if p.state == "retrying"]
    return {"status": DEGRADED if failed else OK, "failed_channels": failed, "retrying_channels": retrying}


@csrf_exempt
def healthz(request: HttpRequest) -> HttpResponse:
    if request.method not in READ_METHODS:
        return method_not_allowed(request)
    checks = {"database": check_database(), "broker": check_broker(settings.CELERY_BROKER_URL)}
    checks["last_ingest"] = (
        check_ingest() if checks["database"]["status"] == OK else {"status": ERROR, "error": "database unreachable"}
    )
    if checks["database"]["status"] == OK:
        checks["refused_nodes"] = check_refused()
        checks["held_collectors"] = check_held()
        checks["notifications"] = check_notifications()
    failing = [name for name, result in checks.items() if result["status"] not in HEALTHY | {DEGRADED}]
    degraded = [name for name, result in checks.items() if result["status"] == DEGRADED]
    status = "fail" if failing else DEGRADED if degraded else "ok"
    body = {"status": status, "failing": failing, "degraded": degraded, "checks": checks}
    # Degraded still answers 200: a load balancer must not take the web role out for a broken mail relay.
    return json_response(body, status=503 if failing else 200)
