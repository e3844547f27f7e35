"""docker-compose.yml run through docker-compose itself (`compose`), for the deploy tests that check what it starts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compose(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is not installed (scripts/system-packages installs it)")
        pytest.skip("docker-compose is not installed")
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")}
    return subprocess.run(
        [binary, "-f", str(ROOT / "docker-compose.yml"), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
