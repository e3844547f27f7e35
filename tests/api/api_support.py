"""Data and clients for the API tests: real snapshots (fixture trees, the simulator) stored by ingest."""

from __future__ import annotations

import itertools
import os
from datetime import datetime
from pathlib import Path

from django.test import Client

from collectors import read_host, to_dict
from fabricweb.health.models import Event
from fabricweb.inventory.models import Port
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.fixture_trees import NODE_EXPORTER, T0, later, snapshot

__all__ = ["NODE_EXPORTER", "T0", "later", "snapshot"]  # re-exported for the API tests


def port(node: str, device: str, number: int) -> Port:
    return Port.objects.get(device__node__name=node, device__name=device, number=number)


def expect(p: Port, speed: str, lanes: int, source: str) -> None:
    """Set a port's expectation, as the health engine does on ingest (call after the last ingest)."""
    p.expected_speed, p.expected_lanes, p.expected_source = speed, lanes, source
    p.save(update_fields=["expected_speed", "expected_lanes", "expected_source"])


_KEYS = itertools.count()


def without_engine_events() -> None:
    """Delete the events the health engine opened during ingest, so a test states every event it expects.

    These tests are about what the API serves; what the rules decide is tested in tests/health*.
    """
    Event.objects.all().delete()


def event(p: Port, kind: str, severity: str, at: datetime, resolved: datetime | None = None, **extra) -> Event:
    """An event on a port as the health engine would store it."""
    node = p.device.node
    return Event.objects.create(
        node=node,
        device=p.device,
        port=p,
        kind=kind,
        severity=severity,
        key=f"{node.name}/{p.device.name}/{p.number}:{kind}:{next(_KEYS)}",
        message=extra.pop("message", f"{kind} on {node.name} {p.device.name}/{p.number}"),
        reason=extra.pop("reason", ""),
        opened_at=at,
        updated_at=resolved or at,
        resolved_at=resolved,
        **extra,
    )


def store_fixture_node(host: str = "cn001", polls: int = 2, step_s: float = 10.0) -> list[dict]:
    """The procfs tree as `host`, polled `polls` times `step_s` apart with traffic and symbol errors."""
    snaps = [snapshot(host=host)]
    for i in range(1, polls):
        snaps.append(later(snaps[0], i * step_s, {"port_rcv_data": 4_000 * i, "symbol_error": 3 * i}))
    for s in snaps:
        ingest_snapshot(s)
    return snaps


class SimFabric:
    """A simulated fabric, stepped and stored one poll at a time (every node each poll)."""

    def __init__(self, out: Path, nodes: int, seed: int = 0, start: datetime = T0) -> None:
        from collectors import sim

        self.start = start.timestamp()
        self.out = str(out)
        self.fabric = sim.Fabric.create(self.out, nodes, seed=seed)
        self.nodes = sorted(n for n in os.listdir(self.out) if n.startswith("cn"))

    def poll(self, seconds: float = 10.0) -> None:
        self.fabric.step(seconds)
        now = self.start + self.fabric.clock
        for n in self.nodes:
            ingest_snapshot(to_dict(read_host(os.path.join(self.out, n), host=n, use_verbs=False, now=now)))


class Api:
    """The Django test client over HTTPS (production redirects plain HTTP), optionally with a token."""

    def __init__(self, client: Client, token: str | None = None) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, data: dict | None = None, **headers):
        return self.client.get(path, data, secure=True, headers={**self.headers, **headers})

    def json(self, path: str, data: dict | None = None, status: int = 200) -> dict:
        response = self.get(path, data)
        assert response.status_code == status, (response.status_code, response.content[:500])
        assert response["Content-Type"] == "application/json"
        return response.json()

    def send(self, method: str, path: str, **headers):
        return self.client.generic(method, path, secure=True, headers={**self.headers, **headers})
