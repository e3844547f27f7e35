"""Covers fabricweb/csp.py, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/port.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/wall.py,
fabricweb/api/healthz.py, fabricweb/exporter/views.py, fabricweb/api/errors.py; through them
fabricweb/dashboard/csvexport.py, fabricweb/dashboard/eventrange.py, fabricweb/dashboard/forms.py,
fabricweb/dashboard/linkends.py, fabricweb/dashboard/switches.py, fabricweb/dashboard/views/forbidden.py,
fabricweb/tokens.py.

Content-Security-Policy (fabricweb/csp.py) on every HTML page, on SQLite and PostgreSQL: scripts from our
own origin only (no inline script, no eval), and no header on what no browser renders (/metrics, JSON).
The browser side (charts draw and live refresh works under the policy) is test_dashboard_csp_browser.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from fabricweb.csp import POLICY
from tests.dashboard.dashboard_support import Browser
from tests.fabric.fabric_support import polled_worlds

PAGES = [
    "/", "/nodes/cn001/", "/ports/cn001/mlx5_0/1/", "/events/", "/fabric/", "/switches/leaf01/",
    "/ports/leaf01/switch/1/", "/wall/",
]  # fmt: skip
TEMPLATES = "templates"


@pytest.fixture
def world(each_db, tmp_path):
    return polled_worlds(tmp_path)(polls=1)


def directives(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split("; ")}


def assert_strict(response, page: str) -> None:
    assert response["Content-Type"].startswith("text/html"), page
    policy = directives(response)
    assert policy["script-src"] == ["'self'"], page  # no 'unsafe-inline', no 'unsafe-eval', no other origin
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"], page
    assert policy["base-uri"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"], page
    assert policy["form-action"] == ["'self'"], page


def test_every_dashboard_page_allows_scripts_from_our_origin_only(viewer, world):
    for page in PAGES:
        assert_strict(viewer.get(page), page)


def test_the_login_and_admin_pages_carry_the_policy(each_db):
    anonymous = Browser()
    assert_strict(anonymous.get("/login/"), "/login/")
    assert_strict(anonymous.get("/admin/login/"), "/admin/login/")
    admin = get_user_model().objects.create_superuser("ada", password="not-used-in-tests")
    staff = Browser(admin)
    for page in ("/admin/", "/admin/alerts/channel/", "/admin/alerts/channel/add/"):
        assert_strict(staff.get(page), page)
    assert_strict(staff.get("/nodes/no-such-node/", status=404), "a 404 page")


def test_json_and_metrics_do_not_get_the_page_policy(viewer, world):
    for page in ("/ports/cn001/mlx5_0/1/series", "/healthz", "/metrics"):
        response = viewer.get(page, status=None)
        assert not response["Content-Type"].startswith("text/html"), page
        assert response.get("Content-Security-Policy") != POLICY, page
    # JSON from fabricweb/api/http.py (the API, /healthz) keeps its own stricter one: it loads nothing.
    api = viewer.get("/api/v1/nodes/", status=None)
    assert api["Content-Type"].startswith("application/json")
    assert api["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_no_template_holds_an_inline_script_or_an_event_handler():
    from django.conf import settings

    found = []
    for path in sorted((settings.BASE_DIR / TEMPLATES).rglob("*.html")):
        text = path.read_text()
        for pattern in (r"<script(?![^>]*\bsrc=)[^>]*>", r"\son[a-z]+\s*=", r"javascript:"):
            found += [f"{path.name}: {m}" for m in re.findall(pattern, text, re.I)]
    assert found == []
