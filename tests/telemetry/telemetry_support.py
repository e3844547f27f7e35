"""Snapshots for the telemetry tests: the real fixture trees, read as a node would send them."""

from __future__ import annotations

from tests.fixture_trees import FIXTURES, NODE_EXPORTER, PROCFS, T0, later, snapshot

__all__ = ["FIXTURES", "NODE_EXPORTER", "PROCFS", "T0", "later", "port_of", "snapshot"]


def port_of(snap: dict, device: str, number: int) -> dict:
    dev = next(d for d in snap["devices"] if d["name"] == device)
    return next(p for p in dev["ports"] if p["port"] == number)
