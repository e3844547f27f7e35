"""Covers fabricweb/inventory/readings.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py.

Per-poll readings (raw counters, ring, state_polls) live in NodeReadings, not in the port rows.

Ingest keeps them in memory between batches (rowcache) and writes them once per node-poll; a
process that starts empty, or takes a node over from another, continues from what is stored.
Port rows are rewritten only when something on them changed, and a node's hw_counters only when they did.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collectors import wire
from fabricweb.exporter import tables
from fabricweb.inventory import readings
from fabricweb.inventory.models import Node, NodeHwReadings, NodeReadings, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.intake.messages import from_wire
from fabricweb.telemetry.validation.quickwire import parse_wire
from fabricweb.telemetry.validation.typed import SnapshotIn
from tests.telemetry.telemetry_support import PROCFS, T0, later, port_of, snapshot

# Each ingest commits: the row cache is in play.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_cache")]
STEP = {"port_xmit_data": 4000, "symbol_error": 3}


def polls(host: str, n: int) -> list[dict]:
    out = [snapshot(PROCFS, host=host, at=T0)]
    for _ in range(n - 1):
        out.append(later(out[-1], 10, STEP))
    return out


def history(host: str) -> tuple[list, dict]:
    """What a node's polls left: every sample's deltas, and each port's stored readings (ids made names)."""
    ports = Port.objects.filter(device__node__name=host).select_related("device")
    names = {p.pk: (p.device.name, p.number) for p in ports}
    found = samples.between(nodes=Node.objects.filter(name=host))
    deltas = sorted((*names[s.port_id], s.ts, s.interval_s, s.xmit_bytes, s.symbol_error) for s in found)
    stored = {(p.device.name, p.number): readings.of_nodes([p.device.node_id])[p.pk] for p in ports}
    return deltas, stored


def test_a_fresh_process_continues_a_nodes_deltas_ring_and_state_polls_exactly(each_db, fresh_cache):
    for snap in polls("cn001", 5):  # one process all along
        ingest_snapshot(snap)
    for snap in polls("cn002", 5):  # a restart (an empty row cache) before every poll
        fresh_cache.drop()
        ingest_snapshot(snap)
    assert fresh_cache.hits == 4 and fresh_cache.misses == 6  # cn001 read once; cn002 at every poll
    kept, restarted = history("cn001"), history("cn002")
    assert kept == restarted
    deltas, stored = restarted
    assert [s[4] for s in deltas if s[:2] == ("mlx5_0", 1)] == [None, 4000, 4000, 4000, 4000]
    last_collected_at, state_polls, _, _, _, recent = stored["mlx5_0", 1]
    assert last_collected_at == T0.replace(second=40) and state_polls == 5
    assert [entry[2].get("symbol_error") for entry in recent] == [3, 3, 3, 3]  # health's history, whole


def test_a_node_taken_over_and_back_counts_every_poll_once(each_db, fresh_cache):
    snaps = polls("cn001", 6)
    node = lambda: Node.objects.get(name="cn001")  # noqa: E731
    ingest_snapshot(snaps[0])
    ingest_snapshot(snaps[1])
    held = fresh_cache.take("cn001", node().pk, node().ingest_token)  # this process's rows as of poll 2
    # Another consumer takes the node's shard over (intake/shards.py) and stores polls 3 and 4 from the database.
    ingest_snapshot(snaps[2])
    fresh_cache.drop()
    ingest_snapshot(snaps[3])
    fresh_cache.drop()
    # The shard comes back to the first process, which still holds its rows of poll 2: not reused.
    fresh_cache.keep([held])
    ingest_snapshot(snaps[4])
    ingest_snapshot(snaps[5])
    deltas, stored = history("cn001")
    assert [s[4] for s in deltas if s[:2] == ("mlx5_0", 1)] == [None] + [4000] * 5
    assert [s[5] for s in deltas if s[:2] == ("mlx5_0", 1)] == [None] + [3] * 5
    assert stored["mlx5_0", 1][1] == 6  # state_polls: no poll lost, none counted twice


def _versions(backend: str) -> dict[int, str]:
    """PostgreSQL: each port row's physical version (ctid: a new one at every UPDATE, HOT or not)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, ctid::text FROM inventory_port")
        return dict(cursor.fetchall())


def _port_updates(ctx: CaptureQueriesContext) -> list[str]:
    # executemany is logged as "<n> times: UPDATE ..."
    return [q["sql"] for q in ctx.captured_queries if 'UPDATE "inventory_port"' in q["sql"]]


def test_a_quiet_poll_does_not_rewrite_the_port_rows(each_db):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    ingest_snapshot(later(first, 10, STEP))
    if each_db == "postgres":
        before = _versions(each_db)
        ingest_snapshot(later(first, 20, {"port_xmit_data": 8000, "symbol_error": 6}))
        assert _versions(each_db) == before
    else:
        with CaptureQueriesContext(connection) as ctx:
            ingest_snapshot(later(first, 20, {"port_xmit_data": 8000, "symbol_error": 6}))
        assert _port_updates(ctx) == []
    port = readings.attach([Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)])[0]
    assert port.counters["symbol_error"] == port_of(first, "mlx5_0", 1)["counters"]["symbol_error"] + 6


def test_a_quiet_poll_in_the_agents_wire_form_typed_by_the_quick_path_does_not_rewrite_the_port_rows(each_db):
    encoder = wire.Encoder("fabricweb (tests)")
    first = snapshot(PROCFS, at=T0)
    sent = [
        json.loads(json.dumps(encoder.encode(snap)))
        for snap in (first, later(first, 10, STEP), later(first, 20, {"port_xmit_data": 8000, "symbol_error": 6}))
    ]
    assert sent[2]["wire"] == 3 and sent[2]["devices"][0]["ports"][0]["link"][0] == 4  # the short forms
    ingest_snapshot(from_wire(sent[0]))  # the long way, as a consumer reads what it doubts: it learns the names
    typed = [parse_wire(data, datetime.fromisoformat(data["collected_at"])) for data in sent[1:]]
    assert all(type(t) is SnapshotIn for t in typed)
    for data in typed:  # its link read short is the link the long way stored: nothing on the rows changed
        if each_db == "postgres":
            before = _versions(each_db)
            ingest_snapshot(data)
            assert _versions(each_db) == before
        else:
            with CaptureQueriesContext(connection) as ctx:
                ingest_snapshot(data)
            assert _port_updates(ctx) == []


def test_a_port_row_is_rewritten_when_its_link_changes(each_db):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    ingest_snapshot(later(first, 10, STEP))
    moved = later(first, 20, STEP, lid=4242)
    if each_db == "postgres":
        before = _versions(each_db)
        ingest_snapshot(moved)
        after = _versions(each_db)
        assert all(after[pk] != before[pk] for pk in before)
    else:
        with CaptureQueriesContext(connection) as ctx:
            ingest_snapshot(moved)
        assert len(_port_updates(ctx)) == 1 and _port_updates(ctx)[0].startswith("4 times: ")  # each port once
    assert set(Port.objects.values_list("lid", flat=True)) == {4242}


# -- the history is a checkpoint: a reader replays the samples of the polls since -------------------

WAIT = {"port_xmit_data": 4000, "port_xmit_wait": 250}  # a busy port: its ring keeps every recent poll
DOWN = {"id": 1, "name": "DOWN"}
ACTIVE = {"id": 4, "name": "ACTIVE"}


def eventful(host: str) -> list[dict]:
    """Forty polls over 400 s (three checkpoints): congestion at every poll, errors, the links going
    down and up, a capped counter, and the node's clock stepping back 25 s and on again."""
    out = [snapshot(PROCFS, host=host, at=T0)]
    for k in range(1, 40):
        bump = {**WAIT, "symbol_error": 2} if k % 7 == 0 else WAIT
        changes = {}
        if k in (11, 12):
            changes["state"] = DOWN
        if k == 20:
            changes["capped"] = ["port_xmit_wait"]
        seconds = -25 if k == 30 else 10
        out.append(later(out[-1], seconds, bump, **changes))
        if k in (11, 12, 20):  # what later() set stays set: back to normal at the next poll
            for port in (p for d in out[-1]["devices"] for p in d["ports"]):
                port.setdefault("state", ACTIVE)
    for snap in out[13:]:
        for port in (p for d in snap["devices"] for p in d["ports"]):
            port["state"] = ACTIVE
    for snap in out[21:]:
        for port in (p for d in snap["devices"] for p in d["ports"]):
            port["capped"] = []
    return out


def test_a_process_that_restarts_at_every_poll_replays_the_history_exactly(each_db, fresh_cache):
    for snap in eventful("cn001"):
        ingest_snapshot(snap)
    for snap in eventful("cn002"):
        fresh_cache.drop()
        ingest_snapshot(snap)
    kept, restarted = history("cn001"), history("cn002")
    assert kept == restarted
    _, stored = kept
    _, state_polls, _, _, _, recent = stored["mlx5_0", 1]
    assert state_polls == 27  # up again since poll 13
    assert sum(entry[2].get("symbol_error") or 0 for entry in recent) == 2 * 5  # polls 7, 14, 21, 28, 35
    assert len(recent) > 30  # every poll of the last 600 s kept whole


def test_a_quiet_poll_within_the_checkpoint_leaves_the_stored_history_as_it_was(each_db, fresh_cache):
    polls_ = [snapshot(PROCFS, at=T0)]
    for _ in range(5):
        polls_.append(later(polls_[-1], 10, WAIT))
    stored = []
    for snap in polls_:
        ingest_snapshot(snap)
        row = Node.objects.get(name="cn001").readings
        stored.append((bytes(row.counters), bytes(row.history)))
    counters, histories = zip(*stored, strict=True)
    assert len(set(counters)) == 6  # the counters at every poll
    assert len(set(histories)) == 1  # the checkpoint of the first poll (every port new): 50 s ago
    port = readings.attach([Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)])[0]
    assert port.state_polls == 6 and len(port.recent) == 5  # yet readers see every poll


def test_a_checkpoint_is_written_again_after_its_interval(each_db, fresh_cache):
    snap = snapshot(PROCFS, at=T0)
    ingest_snapshot(snap)
    histories = []
    for _ in range(15):
        snap = later(snap, 10, WAIT)
        ingest_snapshot(snap)
        histories.append(bytes(Node.objects.get(name="cn001").readings.history))
    assert len(set(histories)) == 2  # polls 2-12 share the first checkpoint; the 13th (120 s on) writes one
    assert histories[11] != histories[10] == histories[0]


def test_a_reader_replays_no_poll_newer_than_the_counters_it_read(each_db, fresh_cache):
    """A poll committed between reading a node's readings row and its samples (readers take no lock) is left
    out, so state_polls and the ring stay those of the poll the counters are of, not one ahead."""
    snaps = polls("cn001", 5)
    for snap in snaps[:4]:
        ingest_snapshot(snap)
    node = Node.objects.select_related("readings__hw").get(name="cn001")  # the row as of poll 4, held
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1).pk
    before = readings.of_node(node)[port]
    assert before[0] == T0.replace(second=30) and before[1] == 4 and len(before[5]) == 3
    ingest_snapshot(snaps[4])  # committed meanwhile
    assert readings.of_node(node)[port] == before
    assert readings.of_node(Node.objects.select_related("readings__hw").get(name="cn001"))[port][1] == 5


# -- hw_counters: a row of their own, written when they changed -----------------------------------------------


def _hw_column(host: str) -> bytes | None:
    column = NodeHwReadings.objects.filter(readings__node__name=host).values_list("hw_counters", flat=True).first()
    return None if column is None else bytes(column)


def _stored_hw(host: str) -> dict:
    ports = Port.objects.filter(device__node__name=host).select_related("device")
    return {(p.device.name, p.number): p.hw_counters for p in readings.attach(ports)}


def _mark(host: str) -> bytes:
    """The node's hw_counters column, rewritten as the same JSON in other bytes: still there at the next read
    only if nothing wrote the column meanwhile."""
    marked = b" " + json.dumps(json.loads(_hw_column(host))).encode()  # (a leading space: read by json)
    NodeHwReadings.objects.filter(readings__node__name=host).update(hw_counters=marked)
    return marked


def test_a_nodes_hw_counters_are_written_when_its_agent_sends_other_ones_only(each_db, fresh_cache):
    encoder = wire.Encoder("fabricweb (tests)")
    first = snapshot(PROCFS, at=T0)
    second = later(first, 10, STEP)
    third = later(second, 10, STEP)
    port_of(third, "mlx5_0", 1)["hw_counters"]["out_of_buffer"] = 7
    sent = [json.loads(json.dumps(encoder.encode(snap))) for snap in (first, second, third)]
    assert "hw_counters" not in sent[1]["devices"][2]["ports"][0]  # as last sent
    assert "hw_counters" in sent[2]["devices"][2]["ports"][0]

    ingest_snapshot(from_wire(sent[0]))
    assert _stored_hw("cn001")["mlx5_0", 1]["local_ack_timeout_err"] == 131
    marked = _mark("cn001")
    counters = bytes(Node.objects.get(name="cn001").readings.counters)
    ingest_snapshot(from_wire(sent[1]))
    assert _hw_column("cn001") == marked  # not written again
    assert bytes(Node.objects.get(name="cn001").readings.counters) != counters  # the counters are, at every poll
    assert _stored_hw("cn001") == {
        ("hfi1_0", 1): {},
        ("mlx4_0", 1): {},
        ("mlx4_0", 2): {},
        ("mlx5_0", 1): port_of(first, "mlx5_0", 1)["hw_counters"],
    }
    served = {row[0]: row[-2] for row in tables.ports(None, counters=True, hw=True)}  # what /metrics?set=hw reads
    assert served[Port.objects.get(device__name="mlx5_0").pk] == port_of(first, "mlx5_0", 1)["hw_counters"]
    ingest_snapshot(from_wire(sent[2]))
    assert _hw_column("cn001") != marked
    assert _stored_hw("cn001")["mlx5_0", 1]["out_of_buffer"] == 7
    fresh_cache.drop()  # a process that starts reads them back as the last one held them
    ingest_snapshot(from_wire(json.loads(json.dumps(encoder.encode(later(third, 10, STEP))))))
    assert _stored_hw("cn001")["mlx5_0", 1]["out_of_buffer"] == 7


def test_a_row_with_the_hw_counters_in_its_counters_gets_their_column_at_the_next_poll(each_db, fresh_cache):
    first = snapshot(PROCFS, at=T0)
    ingest_snapshot(first)
    document = json.loads(bytes(Node.objects.get(name="cn001").readings.counters))
    hw = json.loads(_hw_column("cn001"))
    by_port = dict(hw["ports"])
    names = document["names"]
    for entry in document["ports"]:  # as the release before wrote it: the sets in the counters column
        values = by_port[entry[0]]
        if values is not None:
            names.append(hw["names"][values[0]])
            entry[4] = [len(names) - 1, *values[1:]]
    NodeReadings.objects.filter(node__name="cn001").update(counters=json.dumps(document).encode())
    NodeHwReadings.objects.filter(readings__node__name="cn001").delete()
    before = _stored_hw("cn001")
    assert before["mlx5_0", 1]["local_ack_timeout_err"] == 131  # read from the counters column
    fresh_cache.drop()  # (the new release's first process)
    ingest_snapshot(later(first, 10, STEP))
    assert _hw_column("cn001") is not None
    assert _stored_hw("cn001") == before
