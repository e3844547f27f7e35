"""Fixtures for the dashboard's view tests: a small simulated fabric with faults, stored through the real
ingest and health engine, and logged-in clients in each role (over HTTPS, as production redirects HTTP)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api.api_support import SimFabric
from tests.dashboard.dashboard_support import Browser, create_roles, make_user


@pytest.fixture(autouse=True)
def roles(request):
    """The roles the migration created, again where a transactional test of another module flushed them
    (a flush empties every table, data migrations' rows included)."""
    if "each_db" not in request.fixturenames:
        return
    request.getfixturevalue("each_db")
    create_roles()


@pytest.fixture
def operator(each_db) -> Browser:
    return Browser(make_user("olga", "operator"))


@pytest.fixture
def viewer(each_db) -> Browser:
    return Browser(make_user("victor", "viewer"))


@pytest.fixture
def faulty(each_db, tmp_path) -> SimFabric:
    """3 nodes polled until now: cn002 mlx4_0/1 trained at 1X (degraded), cn003 mlx5_1/1 down."""
    fab = SimFabric(tmp_path / "sim", 3, start=timezone.now() - timedelta(minutes=2))
    fab.poll()
    fab.poll()
    fab.fabric.add_fault("cn002/mlx4_0/1:width=1X", "cn003/mlx5_1/1:down")
    fab.poll()
    fab.poll()
    return fab
