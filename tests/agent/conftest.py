"""Fixtures for the node agent's tests: the fake pyverbs of the collectors' tests, shared."""

from tests.collectors.conftest import fake_pyverbs  # noqa: F401
