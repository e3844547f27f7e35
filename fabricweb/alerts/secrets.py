"""Channel secrets from the environment: NAME, or NAME_FILE (a file holding it, e.g. a Docker secret).

Only variables named FABRIC_ALERT_... may be a channel's secret. A channel's secret leaves this
server (as an SMTP password, or as the URL it posts to), so a channel that could name any variable
could send the node signing key or the database password to whoever runs its receiver. The rule is
here once: the admin form and model validation, the channel file, and every read before a send.
"""

from __future__ import annotations

import re

from fabricweb.env import SecretMissing
from fabricweb.env import read_secret as read_optional_secret

__all__ = ["PREFIX", "SecretMissing", "SecretRefused", "read_secret", "secret_env_problem"]

PREFIX = "FABRIC_ALERT_"
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# This server's own secrets (and their _FILE forms), named in the refusal so the operator sees
# what the channel would have sent. The prefix rule refuses them anyway.
OWN_SECRETS = (
    ("FABRIC_NODE_KEY", "a node signing key"),
    ("FABRIC_COLLECTOR_KEY", "a fabric collector's signing key"),
    ("SECRET_KEY", "Django's SECRET_KEY"),
    ("DATABASE_", "the database address and password"),
    ("POSTGRES_", "the database credentials"),
    ("PGPASS", "the database password"),
    ("REDIS_", "the broker address and password"),
    ("FABRIC_REDIS_", "the broker's TLS credentials"),
    ("CELERY_", "the broker address and password"),
    ("FABRIC_METRICS_", "the /metrics credentials"),
)


class SecretRefused(SecretMissing):
    """secret_env names a variable a channel may not send (see PREFIX)."""


def secret_env_problem(name: object) -> str | None:
    """Why `name` may not be a channel's secret_env, or None. The empty name (no secret) is fine."""
    if name == "":
        return None
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        return "secret_env must be an environment variable name (A-Z, 0-9, _)"
    if name.startswith(PREFIX) and len(name) > len(PREFIX):
        return None
    example = f"name a variable {PREFIX}... instead (e.g. {PREFIX}SMTP_PASSWORD)"
    for prefix, what in OWN_SECRETS:
        if name.startswith(prefix):
            return f"secret_env {name} is refused: it holds {what}, which must never leave this server; {example}"
    return (
        f"secret_env {name} is refused: a channel's secret must be in a variable named {PREFIX}..., "
        f"so no channel can send one of this server's own secrets; {example}"
    )


def read_secret(name: str) -> str:
    """The channel's secret; SecretMissing names the variable, never a value. A name the rule refuses
    is never read, even from a channel stored before the rule (SecretRefused)."""
    if not name:
        raise SecretMissing("no secret_env set")
    problem = secret_env_problem(name)
    if problem:
        raise SecretRefused(problem)
    value = read_optional_secret(name)
    if value is None:
        raise SecretMissing(f"neither {name} nor {name}_FILE is set in the environment")
    return value
