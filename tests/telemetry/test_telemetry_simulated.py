"""Covers fabricweb/inventory/readings.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py.

Ingest of snapshots read from the simulator's node trees, faults included, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from collectors import read_host, to_dict
from fabricweb.inventory import readings
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_batch

sim = pytest.importorskip("collectors.sim")

T0 = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
STEP = 10.0


class Fabric:
    """A simulated fabric, stepped and ingested one poll at a time."""

    def __init__(self, out, nodes: int) -> None:
        self.out = str(out)
        self.fabric = sim.Fabric.open(self.out, nodes, None, seed=7, fresh=True)
        self.nodes = sorted(n for n in os.listdir(self.out) if n.startswith("cn"))

    def devices(self, node: str) -> list[str]:
        return sorted(os.listdir(os.path.join(self.out, node, "class", "infiniband")))

    def poll(self):
        self.fabric.step(STEP)
        now = T0 + self.fabric.clock
        snaps = [to_dict(read_host(os.path.join(self.out, n), host=n, use_verbs=False, now=now)) for n in self.nodes]
        batch = ingest_batch(snaps)
        assert not batch.rejected, batch.rejected
        return {r.node: r for r in batch.results}


def port(node: str, device: str, number: int = 1) -> Port:
    """The stored port with its stored readings (raw counters, ring, state_polls)."""
    return readings.attach([Port.objects.get(device__node__name=node, device__name=device, number=number)])[0]


def test_a_simulated_fabric_ingests_poll_after_poll(each_db, tmp_path):
    fab = Fabric(tmp_path, 4)
    first = fab.poll()
    ports = sum(r.ports_ingested for r in first.values())
    assert ports == Port.objects.count() > 0
    for _ in range(3):
        fab.poll()
    stored = list(samples.between())
    assert len(stored) == 4 * ports
    assert any(s.interval_s == STEP and (s.xmit_bytes or 0) > 0 for s in stored)
    assert not [s for s in stored if s.interval_s == STEP and not s.reset and (s.xmit_bytes or 0) < 0]


def test_simulated_faults_show_in_the_port_state(each_db, tmp_path):
    fab = Fabric(tmp_path, 4)
    fab.poll()
    slow_dev, gone_dev, noisy_dev = fab.devices("cn002")[0], fab.devices("cn003")[0], fab.devices("cn001")[0]
    slow = port("cn002", slow_dev)
    native = (slow.speed, slow.lanes)
    fab.fabric.add_fault(
        f"cn002/{slow_dev}/1:speed=SDR",
        f"cn003/{gone_dev}:vanish",
        f"cn001/{noisy_dev}/1:symbol-errors=5",
        "cn004:reset",
    )
    results = fab.poll()
    fab.poll()

    slow = port("cn002", slow_dev)
    assert slow.speed == "SDR"
    assert (slow.best_speed, slow.best_lanes) == native  # the best link held is remembered
    assert gone_dev in results["cn003"].vanished
    assert Device.objects.get(node__name="cn003", name=gone_dev).vanished_at is not None
    noisy = samples.last_of_port(port("cn001", noisy_dev))
    assert noisy.symbol_error == pytest.approx(5 * STEP, abs=5)
    assert port("cn001", noisy_dev).recent
    assert results["cn004"].resets > 0
    assert any(s.reset for s in samples.between(nodes=Node.objects.filter(name="cn004")))
