"""Fixtures of the pipeline tests: a leased Redis database as the broker, and per-process caches emptied."""

from __future__ import annotations

import pytest
import redis

from fabricweb.celery import app
from fabricweb.health.records import context
from fabricweb.telemetry.storage import rowcache
from tests.e2e.e2e_harness import leased_redis_db
from tests.pipeline.pipeline_support import Broker


@pytest.fixture
def broker():
    with leased_redis_db() as url, app.connection_for_write(url) as conn:
        yield Broker(url, redis.Redis.from_url(url), conn)


@pytest.fixture(autouse=True)
def fresh_caches():
    """Rows and health norms are cached per process; the tables are emptied between these tests."""
    rowcache.CACHE.drop()
    context.forget()
    yield
    rowcache.CACHE.drop()
    context.forget()
