"""Clients for the dashboard tests: the Django test client over HTTPS, logged in as a user of a role."""

from __future__ import annotations

import importlib
import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count
from django.test import Client


class Browser:
    """The Django test client, over HTTPS, logged in as one user (or none)."""

    def __init__(self, user=None, enforce_csrf_checks: bool = False) -> None:
        self.client = Client(enforce_csrf_checks=enforce_csrf_checks)
        self.user = user
        if user is not None:
            self.client.force_login(user)

    def get(self, path: str, data: dict | None = None, status: int | None = 200):
        response = self.client.get(path, data, secure=True)
        if status is not None:
            assert response.status_code == status, (path, response.status_code, response.content[:800])
        return response

    def post(self, path: str, data: dict | None = None, status: int | None = 302):
        response = self.client.post(path, data or {}, secure=True)
        if status is not None:
            assert response.status_code == status, (path, response.status_code, response.content[:800])
        return response

    def text(self, path: str, data: dict | None = None, status: int = 200) -> str:
        return self.get(path, data, status).content.decode()


def make_user(name: str, role: str | None):
    user = get_user_model().objects.create_user(name, password="not-used-in-tests")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def create_roles() -> None:
    """The viewer and operator groups the migration creates, again where a transactional test of another module
    flushed them (a flush empties every table, data migrations' rows included)."""
    from django.apps import apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Permission

    roles = importlib.import_module("fabricweb.dashboard.migrations.0002_roles")
    wanted = {"viewer": roles.VIEWER_PERMISSIONS, "operator": roles.OPERATOR_PERMISSIONS}
    # Where no flush came before (most tests), one query finds them whole: making sure of every permission took
    # ~60 ms a test, a tenth of the dashboard tests' time.
    have = Group.objects.filter(name__in=wanted).annotate(granted=Count("permissions")).values_list("name", "granted")
    if dict(have) == {name: len(set(granted)) for name, granted in wanted.items()}:
        return
    for config in apps.get_app_configs():
        create_permissions(config, verbosity=0)
    for name, granted in wanted.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in granted:
            group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def overview_grid(html: str) -> str:
    """The overview's grid section of a page's HTML."""
    return html.split('<div class="grid">')[1].split("</section>")[0]


def grid_cell(html: str, where: str) -> str:
    """The overview grid's cell of a port ("cn001/mlx5_0/1"): its class, and its tooltip when it has one."""
    found = re.search(rf'<a class="c (\w+)" href="/ports/{where}/"(?: title="([^"]*)")?>', overview_grid(html))
    assert found, where
    return " ".join(part for part in found.groups() if part)
