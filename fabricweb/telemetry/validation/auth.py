"""Ingest's side of node authentication (fabricweb/nodeauth.py): one rule for the consumer and the Celery task."""

from __future__ import annotations

from django.conf import settings

from fabricweb.nodeauth import NODE, NotAuthenticated, Role, verify

__all__ = ["NotAuthenticated", "authenticated", "check_unsigned"]


def authenticated(kwargs: dict, role: Role = NODE) -> dict:
    """The snapshot of a signed message, checked against its sender's key (a node's, or a fabric collector's)."""
    secret = settings.FABRIC_NODE_KEY_SECRET
    if not secret:
        raise NotAuthenticated("signed, but this server has no FABRIC_NODE_KEY_SECRET to check it with")
    return verify(secret, kwargs, role)


def check_unsigned() -> None:
    """An unsigned snapshot may be stored only while FABRIC_NODE_AUTH is off."""
    if settings.FABRIC_NODE_AUTH == "required":
        raise NotAuthenticated("not signed, and FABRIC_NODE_AUTH is required")
