"""Who is asking: an `Authorization: Bearer` API token, else the Django session.

A request that carries an Authorization header is judged by it alone: a bad token is a
401 even when a session cookie rides along, so a script never silently acts as
whoever last logged in on that browser.
"""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone

from .models import ApiToken, hash_token

# last_used_at is for spotting dead tokens, not an audit log: one write a minute per token
# keeps a script polling every second from turning reads into writes.
LAST_USED_EVERY = timedelta(minutes=1)
BAD_TOKEN = "invalid or revoked API token"


def authenticate(request: HttpRequest):
    """(user, None) when the request may read the API; (None, why) otherwise."""
    header = request.headers.get("Authorization")
    if header is not None:
        return _token_user(header)
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_active:
        return user, None
    return None, None


def _token_user(header: str):
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None, "Authorization: expected 'Bearer <token>'"
    row = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=hash_token(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if row is None:
        return None, BAD_TOKEN
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user, None
