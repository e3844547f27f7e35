"""API tokens: the secret is shown once and only its SHA-256 is kept."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from fabricweb.tokens import hash_token

# Scanners for leaked secrets recognise a fixed prefix; it carries no information.
TOKEN_PREFIX = "fwt_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class ApiToken(models.Model):
    """A bearer token for scripts: `Authorization: Bearer <token>` acts as its user, read-only."""

    name = models.CharField(max_length=100, help_text="What the token is for, e.g. the script using it.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True, editable=False, help_text="SHA-256 of the token (hex).")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Set to revoke: the token stops working.")

    class Meta:
        ordering = ["user", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"], condition=models.Q(revoked_at__isnull=True), name="api_token_unique_live_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"

    @classmethod
    def issue(cls, user, name: str) -> tuple[ApiToken, str]:
        """Create a token for `user`; returns the row and the secret, which is never stored."""
        token = new_token()
        return cls.objects.create(user=user, name=name, token_hash=hash_token(token)), token
