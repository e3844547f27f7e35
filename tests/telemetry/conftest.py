"""Fixtures of the telemetry tests."""

from __future__ import annotations

import pytest

from fabricweb.telemetry.storage import rowcache


@pytest.fixture
def fresh_cache():
    """The ingest row cache, empty and with its counts at zero, before and after the test."""
    rowcache.CACHE.drop()
    rowcache.CACHE.hits = rowcache.CACHE.misses = 0
    yield rowcache.CACHE
    rowcache.CACHE.drop()
