"""Fixtures of the health tests that run on the databases: a simulated fabric, and a fresh health cache."""

from __future__ import annotations

import pytest

from fabricweb.health.records import context
from tests.health_db.health_db_fabric import SimFabric


@pytest.fixture(autouse=True)
def fresh_norms():
    """Policies and the fabric majority are cached per process: never carry them from one test to the next."""
    context.forget()
    yield
    context.forget()


@pytest.fixture
def sim_dir(tmp_path):
    """Where the simulator writes its node trees (tmpfs where there is one: tests/conftest.py)."""
    return str(tmp_path)


@pytest.fixture
def fabric(sim_dir):
    """Six nodes, so every simulated HCA kind is there and six ConnectX-6 ports make a fabric majority."""
    fab = SimFabric(sim_dir, 6)
    kinds = {"cn001": "cx6", "cn002": "cx3", "cn003": "cx6", "cn004": "cx7", "cn005": "cx6", "cn006": "roce"}
    assert fab.kinds == kinds
    return fab


@pytest.fixture
def outcomes(monkeypatch) -> list:
    """The Outcome of every batch the health engine judges during the test, in order (engine.judge_batch,
    as ingest's receiver calls it)."""
    from fabricweb.health.engine import engine

    seen = []
    judge_batch = engine.judge_batch

    def recording(results):
        outcome = judge_batch(results)
        seen.append(outcome)
        return outcome

    monkeypatch.setattr(engine, "judge_batch", recording)
    return seen
