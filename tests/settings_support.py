"""A production environment (PRODUCTION) and `manage`, a manage.py command run in a clean environment: what the
settings and deploy-check tests start the project with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.core.management.utils import get_random_secret_key

REPO = Path(__file__).resolve().parent.parent

PRODUCTION = {
    "SECRET_KEY": get_random_secret_key(),
    "ALLOWED_HOSTS": "fabric.example.org",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    # Nodes sign their snapshots and the broker has ACL users (fabricweb/deploychecks.py warns otherwise).
    "FABRIC_NODE_KEY_SECRET": get_random_secret_key(),
    "REDIS_URL": "redis://central@broker.example.org:6379/0",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECRET", "DATABASE", "SECURE"))}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=clean, capture_output=True, text=True, check=False
    )
