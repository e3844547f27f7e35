"""Covers fabricweb/api/healthz.py; through them fabricweb/brokermemory.py, fabricweb/health/records/freshness.py.

GET /healthz: database, broker (Redis) and last-ingest age, with real services and real failures."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from fabricweb.telemetry.ingest import ingest_snapshot
from harness import free_port
from tests import loopback
from tests.api.api_support import later, snapshot

REDIS_URL = os.environ.get("TEST_REDIS_URL")


@pytest.fixture
def redis_up(settings):
    if not REDIS_URL:
        message = 'TEST_REDIS_URL is not set: run `eval "$(scripts/test-services start)"` first'
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    settings.CELERY_BROKER_URL = REDIS_URL


@pytest.fixture
def silent_server():
    with loopback.silent_server() as port:
        yield port


@pytest.fixture
def database_gone(each_db, tmp_path):
    """Point the default connection at a database that is not there (a directory that does not exist,
    or a PostgreSQL port nothing listens on), as a real outage looks to Django."""
    good = connections["default"]
    broken_settings = dict(good.settings_dict)
    if good.vendor == "sqlite":
        broken_settings["NAME"] = str(tmp_path / "no-such-dir" / "db.sqlite3")
    else:
        broken_settings.update(HOST="127.0.0.1", PORT=str(free_port()))
    broken = type(good)(broken_settings, alias=good.alias)  # the alias this test may use
    connections["default"] = broken
    try:
        yield
    finally:
        connections["default"] = good
        broken.close()


def get(client, path="/healthz", **kw):
    return client.get(path, secure=True, **kw)


def test_healthy_with_fresh_ingest(each_db, client, redis_up):
    ingest_snapshot(snapshot())
    response = get(client)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == "ok" and body["failing"] == []
    assert body["checks"]["database"] == {"status": "ok"} and body["checks"]["broker"]["status"] == "ok"
    assert body["checks"]["broker"]["used_memory_bytes"] > 0  # the test Redis has no maxmemory: said, not degraded
    assert "no maxmemory set" in body["checks"]["broker"]["detail"]
    ingest = body["checks"]["last_ingest"]
    assert ingest["status"] == "ok" and 0 <= ingest["age_s"] < 5 and ingest["last_ingested_at"].endswith("Z")


def test_no_nodes_yet_is_no_data_and_still_healthy(each_db, client, redis_up):
    response = get(client)
    assert response.status_code == 200
    assert response.json()["checks"]["last_ingest"]["status"] == "no data"


def test_stale_ingest_is_a_503_naming_it(each_db, client, redis_up, settings):
    settings.FABRIC_POLL_INTERVAL = 10.0
    ingest_snapshot(snapshot(), now=timezone.now() - timedelta(minutes=5))
    response = get(client)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail" and body["failing"] == ["last_ingest"]
    ingest = body["checks"]["last_ingest"]
    assert ingest["status"] == "stale" and ingest["age_s"] >= 300 and ingest["threshold_s"] == 30.0


def test_redis_down_is_a_503_naming_the_broker(each_db, client, settings):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    started = time.monotonic()
    response = get(client)
    assert time.monotonic() - started < 3
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["broker"]
    assert body["checks"]["broker"]["status"] == "error"
    assert "127.0.0.1" not in response.content.decode()  # details go to the log, not to anonymous callers


def test_a_hung_redis_times_out_instead_of_hanging_the_probe(each_db, client, settings, silent_server):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{silent_server}/0"
    started = time.monotonic()
    response = get(client)
    assert time.monotonic() - started < 3
    assert response.status_code == 503
    assert "did not answer" in response.json()["checks"]["broker"]["error"]


def test_database_down_is_a_503_naming_the_database(each_db, client, redis_up, database_gone):
    response = get(client)
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["database", "last_ingest"]
    assert body["checks"]["database"]["status"] == "error"
    assert "unreachable" in body["checks"]["database"]["error"]


def test_healthz_needs_no_login_answers_plain_http_and_refuses_writes(each_db, client, redis_up):
    assert client.get("/healthz").status_code == 200  # no HTTPS redirect: probes speak plain HTTP
    response = client.post("/healthz", secure=True)
    assert response.status_code == 405 and response.json()["error"]
    assert get(client)["Cache-Control"] == "no-store"


def test_a_host_refused_over_its_budget_is_named_with_its_reason_and_degrades_without_failing(
    each_db, client, redis_up, settings
):
    settings.FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR = 1  # the fixture host has more ports than that
    first = snapshot()
    result = ingest_snapshot(first)
    assert result.status == "refused"
    response = get(client)
    assert response.status_code == 200  # degraded: the rest of the fabric is still monitored
    body = response.json()
    assert (body["status"], body["degraded"]) == ("degraded", ["refused_nodes"])
    refused = body["checks"]["refused_nodes"]
    assert refused["status"] == "degraded" and refused["count"] == 1
    [entry] = refused["nodes"]
    assert entry["node"] == result.node and entry["refused_snapshots"] == 1
    assert entry["reason"].startswith("snapshot would add ") and "FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR" in entry["reason"]

    settings.FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR = 64
    assert ingest_snapshot(later(first, 10)).status == "stored"
    assert get(client).json()["checks"]["refused_nodes"] == {"status": "ok", "count": 0, "nodes": []}


def test_a_broker_past_80_percent_of_its_maxmemory_is_degraded_with_its_numbers(db, client, settings, tmp_path):
    import redis

    with loopback.redis_with_acl(tmp_path, "", "--maxmemory", "16mb", "--maxmemory-policy", "noeviction") as (_, url):
        settings.CELERY_BROKER_URL = url
        assert get(client).json()["checks"]["broker"]["status"] == "ok"
        broker = redis.Redis.from_url(url)
        while broker.info("memory")["used_memory"] < 14 * 2**20:  # 87 % of 16 MiB: snapshots piling up
            broker.lpush("snapshots", b"x" * 256 * 1024)
        response = get(client)
    body = response.json()
    assert response.status_code == 200 and body["status"] == "degraded" and "broker" in body["degraded"]
    check = body["checks"]["broker"]
    assert check["status"] == "degraded" and check["maxmemory_bytes"] == 16 * 2**20
    assert "of its maxmemory of 16 MiB (8" in check["detail"] and "noeviction" in check["detail"]
