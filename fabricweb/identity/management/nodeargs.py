"""What the commands that derive a node's credentials (node_key, broker_acl) check first."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.management.base import CommandError

from collectors.facts import NODE_NAME_PATTERN


def site_secret_and_nodes(nodes: list[str], derived: str) -> str:
    """FABRIC_NODE_KEY_SECRET, once every name in `nodes` is a node name; CommandError naming what is wrong."""
    secret = settings.FABRIC_NODE_KEY_SECRET
    if not secret:
        raise CommandError(f"FABRIC_NODE_KEY_SECRET is not set: {derived} are derived from it")
    bad = [n for n in nodes if not re.fullmatch(NODE_NAME_PATTERN, n)]
    if bad:
        raise CommandError(f"not node names: {', '.join(map(repr, bad))}")
    return secret
