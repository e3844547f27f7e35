"""Wallboard links: a revocable read-only token in the URL of /wall/, for NOC screens that do not log in."""

from __future__ import annotations

import secrets

from django.db import models

from fabricweb.tokens import hash_token

WALL_PREFIX = "fww_"


class WallLink(models.Model):
    """`/wall/?token=...` shows the wallboard (problems and counts, nothing else) without a login."""

    name = models.CharField(max_length=100, help_text="Which screen, e.g. 'NOC left wall'.")
    token_hash = models.CharField(max_length=64, unique=True, editable=False, help_text="SHA-256 of the token (hex).")
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Set to revoke: the link stops working.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def issue(cls, name: str, by: str) -> tuple[WallLink, str]:
        """A new link; returns the row and the token, which is never stored."""
        token = WALL_PREFIX + secrets.token_urlsafe(24)
        return cls.objects.create(name=name, token_hash=hash_token(token), created_by_name=by), token

    @classmethod
    def find(cls, token: str) -> WallLink | None:
        if not token.startswith(WALL_PREFIX) or len(token) > 100:
            return None
        return cls.objects.filter(token_hash=hash_token(token), revoked_at__isnull=True).first()


# The roles: Django groups created by migration 0002_roles. Operators also get the admin (is_staff)
# for link policies, where their group's permissions are all they may change.
VIEWER, OPERATOR = "viewer", "operator"
ROLES = (VIEWER, OPERATOR)
OPERATE = "health.operate"
