"""Covers fabricweb/api/management/commands/create_api_token.py, fabricweb/api/views/nodes.py, fabricweb/api/errors.py;
through them fabricweb/api/auth.py, fabricweb/api/http.py, fabricweb/api/pagination.py, fabricweb/api/params.py.

Who may read the API: a bearer token or a session; read-only; JSON errors only."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from fabricweb.api.models import ApiToken, hash_token
from tests.api.api_support import Api

NODES = "/api/v1/nodes"


def assert_json_error(response, status: int) -> str:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and body["error"]
    return body["error"]


def test_a_valid_token_reads_the_api_and_records_its_use(each_db, api, user):
    assert api.json(NODES) == {"nodes": [], "next": None}
    row = ApiToken.objects.get(user=user)
    assert row.last_used_at is not None


def test_requests_without_credentials_get_a_json_401_with_a_bearer_challenge(each_db, anonymous):
    response = anonymous.get(NODES)
    assert "authentication required" in assert_json_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    ["Bearer fwt_not-a-token", "Bearer ", "Token abc", "Basic bm9jOnNlY3JldA==", "bearer"],
    ids=["wrong token", "empty token", "other scheme", "basic auth", "scheme only"],
)
def test_a_wrong_or_malformed_token_is_refused(each_db, client, token, header):
    response = Api(client).get(NODES, Authorization=header)
    assert_json_error(response, 401)


def test_a_revoked_token_stops_working(each_db, api, user):
    assert api.get(NODES).status_code == 200
    ApiToken.objects.filter(user=user).update(revoked_at=timezone.now())
    assert "revoked" in assert_json_error(api.get(NODES), 401)


def test_a_token_of_a_deactivated_user_is_refused(each_db, api, user):
    user.is_active = False
    user.save()
    assert_json_error(api.get(NODES), 401)


def test_a_session_login_reads_the_api(each_db, client, user):
    client.force_login(user)
    assert Api(client).json(NODES) == {"nodes": [], "next": None}


def test_a_bad_token_is_refused_even_beside_a_valid_session(each_db, client, user):
    client.force_login(user)
    assert_json_error(Api(client, "fwt_wrong").get(NODES), 401)


def test_last_used_is_written_at_most_once_a_minute(each_db, api, user):
    api.get(NODES)
    first = ApiToken.objects.get(user=user).last_used_at
    api.get(NODES)
    assert ApiToken.objects.get(user=user).last_used_at == first
    ApiToken.objects.filter(user=user).update(last_used_at=first - timedelta(minutes=2))
    api.get(NODES)
    assert ApiToken.objects.get(user=user).last_used_at > first


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_the_api_is_read_only(each_db, api, method):
    response = api.send(method, NODES)
    assert "read-only" in assert_json_error(response, 405)
    assert response["Allow"] == "GET, HEAD"


def test_a_post_with_a_session_and_no_csrf_token_gets_a_json_405_not_an_html_403(each_db, user):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert_json_error(Api(browser).send("POST", NODES), 405)


def test_head_answers_like_get_without_a_body(each_db, api):
    response = api.client.head(NODES, secure=True, headers=api.headers)
    assert response.status_code == 200 and response.content == b""


def test_unknown_api_paths_are_json_404s(each_db, api, anonymous):
    for path in ("/api/v1/nope", "/api/v2/nodes", "/api/v1/nodes/", "/api/v1/ports/cn001/mlx5_0/one"):
        assert_json_error(api.get(path), 404)
    assert_json_error(anonymous.get("/api/v1/nope"), 404)


def test_api_responses_are_not_cached_and_vary_by_credentials(each_db, api):
    response = api.get(NODES)
    assert response["Cache-Control"] == "no-store"
    assert {"Authorization", "Cookie"} <= {v.strip() for v in response["Vary"].split(",")}
    assert response["X-Content-Type-Options"] == "nosniff"


def test_create_api_token_prints_a_token_once_and_stores_only_its_hash(each_db, client):
    get_user_model().objects.create_user("grafana")
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", "--user", "grafana", "--name", "dashboards", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert token.startswith("fwt_") and len(token) > 40
    assert "not shown again" in err.getvalue()
    row = ApiToken.objects.get(name="dashboards")
    assert row.token_hash == hash_token(token) and token not in row.token_hash
    assert Api(client, token).get(NODES).status_code == 200


def test_create_api_token_refuses_an_unknown_user_and_a_duplicate_name(each_db):
    with pytest.raises(CommandError, match="--user: no user 'ghost'"):
        call_command("create_api_token", "--user", "ghost", "--name", "x", stdout=io.StringIO())
    get_user_model().objects.create_user("ci")
    call_command("create_api_token", "--user", "ci", "--name", "x", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="already has a live token"):
        call_command("create_api_token", "--user", "ci", "--name", "x", stdout=io.StringIO(), stderr=io.StringIO())
    # Once revoked, the name may be used again.
    ApiToken.objects.update(revoked_at=timezone.now())
    call_command("create_api_token", "--user", "ci", "--name", "x", stdout=io.StringIO(), stderr=io.StringIO())
    assert ApiToken.objects.count() == 2
