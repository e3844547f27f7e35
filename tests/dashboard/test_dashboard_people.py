"""Covers fabricweb/dashboard/management/commands/create_user.py, fabricweb/dashboard/views/events.py,
fabricweb/dashboard/views/wall.py.

Roles, the user command, login throttling and wall links, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client

from fabricweb.dashboard.models import WallLink
from tests.dashboard.dashboard_support import Browser, make_user


def test_the_roles_exist_with_their_rights(each_db):
    operator = {p.codename for p in Group.objects.get(name="operator").permissions.all()}
    viewer = {p.codename for p in Group.objects.get(name="viewer").permissions.all()}
    assert {"operate", "add_linkpolicy", "change_linkpolicy", "delete_linkpolicy"} <= operator
    assert "operate" not in viewer and not any(c.startswith(("add_", "change_", "delete_")) for c in viewer)


def test_create_user_prints_a_password_once_and_sets_the_role(each_db):
    out, err = StringIO(), StringIO()
    call_command("create_user", "nina", role="operator", url="http://127.0.0.1:8000/", stdout=out, stderr=err)
    password = re.fullmatch(
        r"operator 'nina' created: log in at http://127.0.0.1:8000/ with password (\S+)\n", out.getvalue()
    )[1]
    nina = get_user_model().objects.get(username="nina")
    assert nina.check_password(password) and nina.is_staff and nina.has_perm("health.operate")
    call_command("create_user", "nina", role="viewer", stdout=StringIO(), stderr=StringIO())
    nina = get_user_model().objects.get(username="nina")
    assert [g.name for g in nina.groups.all()] == ["viewer"] and not nina.is_staff
    assert not nina.has_perm("health.operate")
    with pytest.raises(CommandError):
        call_command("create_user", "x", role="admin")


def test_a_user_logs_in_and_out(each_db):
    get_user_model().objects.create_user("lena", password="a long enough passphrase")
    client = Client()
    response = client.post("/login/", {"username": "lena", "password": "a long enough passphrase"}, secure=True)
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/events/", secure=True).status_code == 200
    client.post("/logout/", secure=True)
    assert client.get("/events/", secure=True).status_code == 302


def test_repeated_wrong_passwords_lock_the_login(each_db):
    get_user_model().objects.create_user("lena", password="a long enough passphrase")
    client = Client()
    for _ in range(4):
        response = client.post("/login/", {"username": "lena", "password": "guess"}, secure=True)
        assert response.status_code == 200 and b"Wrong user name or password" in response.content
    locked = client.post("/login/", {"username": "lena", "password": "guess"}, secure=True)
    assert locked.status_code == 429 and b"Too many failed logins" in locked.content
    right = client.post("/login/", {"username": "lena", "password": "a long enough passphrase"}, secure=True)
    assert right.status_code == 429


def test_a_wall_link_shows_the_wall_without_login_until_revoked(each_db, faulty):
    operator = Browser(make_user("olga", "operator"))
    response = operator.post("/wall/links/", {"name": "NOC left"}, status=200)
    token = re.search(r"/wall/\?token=(fww_[A-Za-z0-9_-]+)", response.content.decode())[1]
    assert token not in operator.text("/wall/links/")  # shown once
    anonymous = Browser()
    wall = anonymous.get("/wall/", {"token": token})
    html = wall.content.decode()
    assert wall["Referrer-Policy"] == "no-referrer"
    assert "✕ down" in html and "cn003 mlx5_1/1: " in html and "Log out" not in html and 'href="/events/"' not in html
    link = WallLink.objects.get()
    assert link.last_used_at is not None
    operator.post(f"/wall/links/{link.pk}/revoke")
    assert "not valid" in anonymous.text("/wall/", {"token": token}, status=403)
    anonymous.get("/wall/", {"token": "fww_guess"}, status=403)
    assert anonymous.get("/wall/", status=302)["Location"].startswith("/login/")


def test_an_operator_edits_link_policies_in_the_admin_and_a_viewer_cannot(each_db):
    for name, role in (("olga", "operator"), ("victor", "viewer")):
        call_command("create_user", name, role=role, stdout=StringIO(), stderr=StringIO())
    operator = Browser(get_user_model().objects.get(username="olga"))
    assert "Link policies" in operator.text("/admin/health/linkpolicy/")
    operator.get("/admin/health/linkpolicy/add/")
    operator.get("/admin/auth/user/", status=403)  # nothing beyond its group's rights
    viewer = Browser(get_user_model().objects.get(username="victor"))
    assert viewer.get("/admin/health/linkpolicy/", status=302)["Location"].startswith("/admin/login/")
