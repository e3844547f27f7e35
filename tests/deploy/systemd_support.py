"""`systemd-analyze verify` of a unit the project ships, its interpreter swapped for this environment's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

INTERPRETER = "/opt/fabricweb-agent/bin/python"  # the install notes' virtual environment


def verify(unit: Path, module: str, tmp_path: Path) -> None:
    """The unit runs `INTERPRETER -m module` and passes `systemd-analyze verify` (which checks that its program
    exists: this environment's Python stands in for the node's venv)."""
    binary = shutil.which("systemd-analyze")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is not installed (Debian's systemd package)")
        pytest.skip("systemd-analyze is not installed")
    text = unit.read_text()
    assert f"ExecStart={INTERPRETER} -m {module}" in text
    copy = tmp_path / unit.name
    copy.write_text(text.replace(INTERPRETER, os.path.realpath(sys.executable)))
    out = subprocess.run([binary, "verify", "--man=no", str(copy)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out.stdout + out.stderr
