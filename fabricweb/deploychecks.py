"""The site's own `manage.py check --deploy` warnings, beside Django's: what the shipped deployment turns on
and a hand-made one may have left off (docs/security.md).

- fabricweb.W001: node authentication off. Every compute node can write to the broker; without signed
  snapshots (fabricweb/nodeauth.py) any of them can report for every other node.
- fabricweb.W002: the broker URL names no user, so the central processes are Redis's `default` user: a broker
  without per-node ACL users (fabricweb/brokeracl.py), where whoever holds the one password can take any
  node's polls, push to the central queues or FLUSHALL.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

from django.conf import settings
from django.core.checks import Warning

NODE_AUTH_OFF = "fabricweb.W001"
BROKER_DEFAULT_USER = "fabricweb.W002"


def broker_user(url: str) -> str | None:
    """The Redis user a broker URL names (its user part, or a unix URL's `?username=`); None when it names none."""
    parts = urlsplit(url)
    user = unquote(parts.username) if parts.username else None
    return user or (parse_qs(parts.query).get("username") or [None])[0]


def node_auth_and_broker_user(app_configs=None, **kwargs) -> list[Warning]:
    """Registered with the `deploy` tag (fabricweb/inventory/apps.py): run by `manage.py check --deploy`."""
    found = []
    if settings.FABRIC_NODE_AUTH != "required":
        found.append(
            Warning(
                "Node authentication is off (FABRIC_NODE_AUTH=off): ingest stores any snapshot that names a node, "
                "so anyone who can write to the broker can report for every node.",
                hint="Set FABRIC_NODE_KEY_SECRET_FILE (or FABRIC_NODE_KEY_SECRET: 32 or more random characters) "
                "with FABRIC_NODE_AUTH=required (its default once the secret is set), and give each node its key "
                "(`manage.py node_key NODE`, docs/agent.md).",
                id=NODE_AUTH_OFF,
            )
        )
    if broker_user(settings.REDIS_URL) in (None, "default"):
        found.append(
            Warning(
                "The broker URL (REDIS_URL) names no Redis user: the central processes are Redis's `default` user, "
                "so the broker has no ACL users and anyone with its one password can take any node's polls, push "
                "to the central queues or empty the broker.",
                hint="Run Redis with an ACL file from `manage.py broker_acl --central NODE...` (`default` off, a "
                "central user, one user per node) and name the central user in REDIS_URL, e.g. "
                "redis://central@broker:6379/0 with REDIS_PASSWORD_FILE (docs/security.md).",
                id=BROKER_DEFAULT_USER,
            )
        )
    return found
