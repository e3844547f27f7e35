"""Channel secrets from the environment: NAME, or NAME_FILE (a file holding it, e.g. a Docker secret)."""

from __future__ import annotations

from fabricweb.env import SecretMissing
from fabricweb.env import read_secret as read_optional_secret

__all__ = ["SecretMissing", "read_secret"]


def read_secret(name: str) -> str:
    """The channel's secret; SecretMissing names the variable, never a value."""
    if not name:
        raise SecretMissing("no secret_env set")
    value = read_optional_secret(name)
    if value is None:
        raise SecretMissing(f"neither {name} nor {name}_FILE is set in the environment")
    return value
