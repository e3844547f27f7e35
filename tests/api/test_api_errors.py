"""Covers fabricweb/api/errors.py, fabricweb/api/views/nodes.py, fabricweb/api/views/ports.py; through them
fabricweb/api/auth.py, fabricweb/api/http.py, fabricweb/api/pagination.py, fabricweb/api/params.py.

Errors raised outside the API views still answer /api/ and /healthz in JSON, and the rest in HTML."""

from __future__ import annotations

from django.test import RequestFactory

from fabricweb.api import errors


def test_a_bad_host_header_on_the_api_is_a_json_400(each_db, client):
    response = client.get("/api/v1/nodes", secure=True, headers={"Host": "evil.example"})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json" and response.json() == {"error": "bad request"}


def test_a_bad_host_header_elsewhere_keeps_djangos_page(each_db, client):
    response = client.get("/admin/", secure=True, headers={"Host": "evil.example"})
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


def test_a_server_error_under_the_api_is_json_without_details():
    response = errors.server_error(RequestFactory().get("/api/v1/ports"))
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.content == b'{"error":"internal error (details are in the server log)"}'
    assert errors.server_error(RequestFactory().get("/admin/"))["Content-Type"].startswith("text/html")
