"""Covers fabricweb/inventory/readings.py: a node's readings row that cannot be read.

A column that is not as ingest writes it (a hand edit, a damaged disk) costs only what it holds, said in the
log: ingest goes on storing the node's polls and writes the row whole again."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest

from fabricweb.inventory import readings
from fabricweb.inventory.models import Node, NodeReadings, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.results import STORED
from tests.telemetry.telemetry_support import PROCFS, T0, later, port_of, snapshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_cache")]
STEP = {"port_xmit_data": 4000, "symbol_error": 3}
LOGGER = "fabricweb.inventory.readings"


def fourth_poll_after(fresh_cache, caplog, **column: bytes) -> tuple[dict, list[str]]:
    """Store three polls of cn001, set a column of its readings row, store the fourth in a process that reads the
    row: (that poll's snapshot, what the log said)."""
    snaps = [snapshot(PROCFS, host="cn001", at=T0)]
    for _ in range(3):
        snaps.append(later(snaps[-1], 10, STEP))
    for snap in snaps[:3]:
        ingest_snapshot(snap)
    NodeReadings.objects.filter(node__name="cn001").update(**column)
    fresh_cache.drop()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert ingest_snapshot(snaps[3]).status == STORED
    return snaps[3], [r.getMessage() for r in caplog.records if r.name == LOGGER]


def at(snap: dict) -> float:
    return datetime.fromisoformat(snap["collected_at"]).timestamp()


def port_1() -> tuple[list, list]:
    """mlx5_0 port 1's stored deltas of port_xmit_data, and its readings as a fresh reader gets them."""
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    found = sorted(samples.between(nodes=Node.objects.filter(name="cn001")), key=lambda s: s.ts)
    return [s.xmit_bytes for s in found if s.port_id == port.pk], readings.of_nodes([port.device.node_id])[port.pk]


def test_an_unreadable_history_begins_the_rings_afresh_and_keeps_the_deltas(each_db, fresh_cache, caplog):
    history = b'{"at": 1, "ports": [[1, 2, {"t": ["x"]}, 4, 5]]}'
    fourth, said = fourth_poll_after(fresh_cache, caplog, history=history)
    node = Node.objects.get(name="cn001")
    assert said == [
        f"node {node.pk}: its readings' history cannot be read (ValueError(\"a ring's columns are not numbers in "
        "arrays t, i, w and pairs in x: TypeError('must be real number, not str')\")): its ports' rings begin afresh"
    ]
    deltas, (_, state_polls, _, _, _, recent) = port_1()
    assert deltas == [None, 4000, 4000, 4000]  # the counters were read: this poll's delta is there
    assert recent == [[at(fourth), 10.0, {"symbol_error": 3}]] and state_polls == 2
    caplog.clear()
    fresh_cache.drop()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        port_1()
    assert caplog.records == []  # its checkpoint was written again at that poll


def test_unreadable_counters_make_the_next_poll_each_ports_first(each_db, fresh_cache, caplog):
    fourth, said = fourth_poll_after(fresh_cache, caplog, counters=b'{"ports": []}')
    node = Node.objects.get(name="cn001")
    assert said == [
        f"node {node.pk}: its readings' counters cannot be read (KeyError('names')): each port's next poll is its first"
    ]
    deltas, (last_collected_at, _, counters, _, _, _) = port_1()
    assert deltas == [None, 4000, 4000, None]  # no baseline for this poll, as for a port's first
    assert counters["port_xmit_data"] == port_of(fourth, "mlx5_0", 1)["counters"]["port_xmit_data"]
    assert last_collected_at.timestamp() == at(fourth)
