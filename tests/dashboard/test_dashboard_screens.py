"""Covers fabricweb/api/errors.py, fabricweb/dashboard/views/wall.py, fabricweb/api/views/events.py; through them
fabricweb/dashboard/views/forbidden.py.

The wall's heat map and its refusals, and the 403 page, through the test client on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

from django.core.exceptions import PermissionDenied
from django.test import Client

from fabricweb.api.errors import permission_denied
from fabricweb.dashboard.models import WallLink
from tests.dashboard.dashboard_support import Browser


def wall_link(operator: Browser) -> str:
    response = operator.post("/wall/links/", {"name": "NOC left"}, status=200)
    return re.search(r"/wall/\?token=(fww_[A-Za-z0-9_-]+)", response.content.decode())[1]


def test_the_wall_shows_every_host_on_its_heat_map_coloured_by_its_worst_port(viewer, faulty):
    html = viewer.text("/wall/")
    found = re.findall(r'<div class="tile (\w+)"><span class="tn">(cn\d+)</span>', html)
    tiles = {name: health for health, name in found}
    assert tiles == {"cn001": "up", "cn002": "degraded", "cn003": "down"}
    assert '<span class="tm">✕ 1</span>' in html  # cn003: one port down
    assert "🔕" not in html  # no glyph that needs an emoji font


def test_a_revoked_wall_link_says_it_was_revoked_and_when(operator, faulty):
    token = wall_link(operator)
    anonymous = Browser()
    assert "No open problems" not in anonymous.text("/wall/", {"token": token})
    link = WallLink.objects.get(name="NOC left")
    operator.post(f"/wall/links/{link.pk}/revoke")
    link.refresh_from_db()

    refused = anonymous.get("/wall/", {"token": token}, status=403)
    html = refused.content.decode()
    when = link.revoked_at.strftime("%Y-%m-%d %H:%M")
    assert "This wall link was revoked" in html and f"was revoked on {when} UTC" in html
    assert "logged out" not in html and "reload" not in html
    # What the wall's live refresh shows in its status line (live.js), instead of "logged out".
    assert refused["X-Fabric-Refused"] == f"this wall link was revoked on {when} UTC"


def test_a_mistyped_wall_link_is_not_called_revoked(each_db):
    refused = Browser().get("/wall/", {"token": "fww_mistyped"}, status=403)
    assert "This is not a wall link" in refused.content.decode() and "revoked" not in refused["X-Fabric-Refused"]


def test_a_viewer_refused_an_operator_page_is_told_why_and_the_way_back(viewer, faulty):
    client: Client = viewer.client
    response = client.get("/wall/links/", secure=True, HTTP_REFERER="https://testserver/events/")
    html = response.content.decode()
    assert response.status_code == 403
    assert "Refused: operators only: acknowledge, silence and accept baselines." in html
    assert "victor, a viewer" in html
    assert '<a href="https://testserver/events/">← Back to where you were</a>' in html


def test_the_403_page_never_sends_the_user_to_another_site(viewer, faulty):
    response = viewer.client.get("/wall/links/", secure=True, HTTP_REFERER="https://evil.example/phish")
    html = response.content.decode()
    assert response.status_code == 403 and "evil.example" not in html
    assert '<a href="/">← Back to where you were</a>' in html


def test_every_page_links_the_favicon(viewer, faulty):
    assert '<link rel="icon" href="/static/dashboard/favicon.svg" type="image/svg+xml">' in viewer.text("/")


def test_an_api_client_refused_is_answered_in_json(rf):
    response = permission_denied(rf.get("/api/v1/events"), PermissionDenied("operators only"))
    assert response.status_code == 403 and json.loads(response.content) == {"error": "operators only"}
