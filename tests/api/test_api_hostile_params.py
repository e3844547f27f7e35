"""Covers fabricweb/api/views/ports.py, fabricweb/api/views/nodes.py, fabricweb/api/views/events.py.

Hostile query parameters on every endpoint answer 4xx with a message, never a 500."""

from __future__ import annotations

import base64

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.api_support import store_fixture_node

PORT = "/api/v1/ports/cn001/mlx4_0/1"
ENDPOINTS = {
    "/api/v1/nodes": ("limit", "offset"),
    "/api/v1/nodes/cn001": (),
    "/api/v1/nodes/cn001/read-errors": ("limit", "offset"),
    "/api/v1/ports": ("node", "state", "degraded", "hca_type", "limit", "offset"),
    PORT: (),
    f"{PORT}/samples": ("since", "until", "limit", "cursor"),
    "/api/v1/events": ("open", "severity", "node", "kind", "since", "limit", "cursor"),
}


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


HOSTILE = [
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "cn\x00001",
    "\x00",
    "x" * 10_000,
    "-1",
    "99999999999999999999999999",
    "NaN",
    "🙂",
    _cursor("0001-01-01T00:00:00+00:00|1"),
    _cursor("9999-12-31T23:59:59+00:00|1"),
    _cursor("2026-03-01T12:00:00+00:00|99999999999999999999999"),
    _cursor("2026-03-01T12:00:00+14:00|-5"),
]


@pytest.fixture
def stored_node(each_db):
    store_fixture_node()


def _assert_answered(api, path: str, params: dict) -> None:
    response = api.get(path, params)
    assert response.status_code < 500, (path, params, response.content[:300])
    assert response["Content-Type"] == "application/json"
    if response.status_code >= 400:
        assert response.json()["error"], (path, params)


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_every_parameter_refuses_a_hostile_value_with_a_message(api, stored_node, value):
    for path, names in ENDPOINTS.items():
        for name in names:
            _assert_answered(api, path, {name: value})


def test_year_1_and_year_9999_windows_are_a_400_that_says_the_range(api, stored_node):
    response = api.get(f"{PORT}/samples", {"until": "0001-01-01T00:00:00Z"})
    assert response.status_code == 400
    assert response.json()["error"].startswith("until: expected a time from 1970 to 2200")
    response = api.get("/api/v1/events", {"node": "cn\x00001"})
    assert response.json() == {"error": "node: must not contain control characters"}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(sorted(ENDPOINTS)),
    name=st.sampled_from(["since", "until", "cursor", "node", "kind", "limit", "offset", "state", "open", "x"]),
    value=st.one_of(st.text(max_size=200), st.sampled_from(HOSTILE), st.datetimes().map(lambda d: d.isoformat())),
)
def test_any_parameter_value_is_answered_without_a_server_error(api, stored_node, path, name, value):
    _assert_answered(api, path, {name: value})
