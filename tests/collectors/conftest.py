"""Fixtures for the collectors tests. Add fixtures here; others' tests share this file."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent.parent / "fakes"


def _take_pyverbs_modules() -> dict:
    """Remove every pyverbs module from sys.modules and return them, to put back later.

    Put back, never re-imported: the real pyverbs' compiled modules stay loaded once
    imported, so a fresh import of pyverbs.pyverbs_error next to them would make new
    exception classes that no longer match what pyverbs.device raises.
    """
    return {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "pyverbs"}


def _restore_pyverbs_modules(saved: dict) -> None:
    _take_pyverbs_modules()
    sys.modules.update(saved)


@pytest.fixture
def fake_pyverbs(monkeypatch):
    """The fake pyverbs (tests/fakes/pyverbs) first on sys.path; yields its fabric to control.

    Fails the test if the code under test left a device context open.
    """
    saved = _take_pyverbs_modules()
    monkeypatch.syspath_prepend(str(FAKES))
    fabric_mod = importlib.import_module("pyverbs._fabric")
    assert Path(fabric_mod.__file__).is_relative_to(FAKES), "the real pyverbs shadows the fake"
    fabric = fabric_mod.reset()
    try:
        yield fabric
        leaked = fabric.close_all()
        assert leaked == 0, f"{leaked} pyverbs Context(s) left open"
    finally:
        _restore_pyverbs_modules(saved)


@pytest.fixture
def no_pyverbs():
    """pyverbs does not import, as on a host without python3-pyverbs."""
    saved = _take_pyverbs_modules()
    sys.modules["pyverbs"] = None  # makes `import pyverbs...` raise ImportError
    try:
        yield
    finally:
        _restore_pyverbs_modules(saved)


@pytest.fixture
def real_pyverbs():
    """The distribution's pyverbs (linked into the venv by scripts/link-pyverbs).

    CI installs python3-pyverbs, so there a missing pyverbs fails the test instead of
    skipping it; elsewhere it skips.
    """
    from collectors.verbs import load_pyverbs

    mods = load_pyverbs()
    if mods is None or Path(mods.device.__file__).resolve().is_relative_to(FAKES.resolve()):
        why = "the distribution's pyverbs does not import in this venv"
        if os.environ.get("CI"):
            pytest.fail(
                f"{why}, and CI is set: install python3-pyverbs (scripts/system-packages) "
                "and run scripts/link-pyverbs (make setup does both)"
            )
        pytest.skip(f"{why} (install python3-pyverbs, then scripts/link-pyverbs)")
    return mods
