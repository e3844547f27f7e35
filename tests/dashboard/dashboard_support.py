"""Clients for the dashboard tests: the Django test client over HTTPS, logged in as a user of a role."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
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
