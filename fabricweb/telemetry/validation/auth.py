"""Ingest's side of node authentication (fabricweb/nodeauth.py): one rule for the consumer and the Celery task.

Fabric collectors are known by an operator's act (settings.FABRIC_COLLECTORS): a sweep of any other name is
refused on its name alone, before its signature is computed or its text read, so a collector key (or, with
FABRIC_NODE_AUTH off, anyone) cannot make ingest walk tens of megabytes under names nobody set up.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from fabricweb.nodeauth import COLLECTOR, NODE, NotAuthenticated, Role, decoded, signed_text

from ..intake.jsonread import json_text_loads

__all__ = ["NotAuthenticated", "authenticated", "check_unsigned", "unknown_collector"]


def authenticated(kwargs: dict, role: Role = NODE, admit: Callable[[str], None] | None = None) -> dict:
    """The snapshot of a signed message, checked against its sender's key (a node's, or a fabric collector's).

    `admit(sender)`, called once the signature holds and before the snapshot is decoded, may raise to refuse
    it: a sender over its budget costs an HMAC, not a parse (the consumer's byte budget, intake/spend.py)."""
    if role is COLLECTOR:
        refusal = unknown_collector(kwargs.get(role.argument))
        if refusal:
            raise NotAuthenticated(refusal)
    secret = settings.FABRIC_NODE_KEY_SECRET
    if not secret:
        raise NotAuthenticated("signed, but this server has no FABRIC_NODE_KEY_SECRET to check it with")
    name, text = signed_text(secret, kwargs, role)
    if admit is not None:
        admit(name)
    return decoded(name, text, role, json_text_loads)


def check_unsigned() -> None:
    """An unsigned snapshot may be stored only while FABRIC_NODE_AUTH is off."""
    if settings.FABRIC_NODE_AUTH == "required":
        raise NotAuthenticated("not signed, and FABRIC_NODE_AUTH is required")


def unknown_collector(name: object) -> str:
    """Why sweeps of fabric collector `name` are not read, in an operator's words; "" when they are.

    Only the names in FABRIC_COLLECTORS are read. With none set, none is while FABRIC_NODE_AUTH is required (a
    site names its collectors as it makes their keys), and any is while it is off (a lab's unsigned sweeps)."""
    known = settings.FABRIC_COLLECTORS
    if name in known or (not known and settings.FABRIC_NODE_AUTH != "required"):
        return ""
    shown = repr(name[:64]) if isinstance(name, str) else f"of no name ({type(name).__name__})"
    listed = f"({', '.join(known)})" if known else "(unset)"
    return (
        f"fabric collector {shown} is not one of FABRIC_COLLECTORS {listed}: its sweeps are not read; "
        "add its name there if it is one of this site's"
    )
