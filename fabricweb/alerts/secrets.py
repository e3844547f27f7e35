"""Channel secrets from the environment: NAME, or NAME_FILE (a file holding it, e.g. a Docker secret)."""

from __future__ import annotations

import os
from pathlib import Path


class SecretMissing(LookupError):
    pass


def read_secret(name: str) -> str:
    """The value of environment variable `name`, or of the file named by `name`_FILE (trailing newline
    dropped). SecretMissing names the variable, never a value."""
    if not name:
        raise SecretMissing("no secret_env set")
    value = os.environ.get(name)
    if value:
        return value
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().rstrip("\n")
        except OSError as e:
            raise SecretMissing(f"{name}_FILE: cannot read the file ({e.strerror})") from None
    raise SecretMissing(f"neither {name} nor {name}_FILE is set in the environment")
