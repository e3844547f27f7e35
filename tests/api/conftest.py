"""Fixtures for the API tests: a user, a token for it, and clients that use them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from fabricweb.api.models import ApiToken
from tests.api.api_support import Api


@pytest.fixture
def user(each_db):
    return get_user_model().objects.create_user("noc", password="not-used-in-tests")


@pytest.fixture
def token(user) -> str:
    return ApiToken.issue(user, "tests")[1]


@pytest.fixture
def api(client, token) -> Api:
    return Api(client, token)


@pytest.fixture
def anonymous(client) -> Api:
    return Api(client)
