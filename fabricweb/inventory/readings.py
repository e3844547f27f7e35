"""A node's per-poll port readings as stored in its NodeReadings row, and reading them back onto ports.

The layout, in one place. Three columns of JSON, two in NodeReadings, one in NodeHwReadings:
- `counters`: `{"names": [[name, ...], ...], "ports": [[port_id, last_collected_at (µs since the
  epoch, UTC) or null, counters, counters_ext, hw_counters, wait], ...]}`, one entry per port: what
  /metrics reads; written at every poll, so it holds the node's last one. Each counter set is null
  (none read) or `[k, value, ...]`: the values of the names `names[k]` lists, in that order. The names
  go once a node, not once a port: a 64-port switch's row is a third of its named form (16 kB against 51),
  which halved PostgreSQL's CPU at 100,000 ports and cut the WAL by a quarter (BENCHMARKS.md). `wait` is
  that poll's `[port_xmit_wait counts or null, seconds]` (null: not known), what /metrics turns into the
  share of link time lost. Its hw_counters are null: they are NodeHwReadings' (a node without that row
  has them here, as written before it). Rows written before the names went once are a bare array of entries
  whose sets are objects of name -> value (and whose first ones have no `wait`): read as they are;
- `hw_counters` (NodeHwReadings): `{"names": [...], "ports": [[port_id, hw_counters], ...]}`, the sets as in
  `counters`, written only when one of them changed (a node's agent sends them every few polls, as last sent
  between: collectors/wire.py) or the node's ports did, and at a process's first poll of the node: 24 values
  a host port that the counters row would carry again at every poll (BENCHMARKS.md);
- `history`: `{"at": µs or null, "ports": [[port_id, state_polls, recent, state_id,
  phys_state_id], ...]}`: what ingest and health read, up to ~110 ring entries per port after
  an hour. `recent` is a list of entries or, for a ring held as columns (ringcolumns.py), its
  `{"t": times, "i": intervals, "w": waits, "x": [[ts, deltas], ...]}`: 2.4 kB of JSON for an
  hour of a busy port against 4.6 kB as entries. It is a checkpoint, written only every
  CHECKPOINT_S of the node's polls (or when a poll cannot be replayed, see
  telemetry/storage/catchup.py): `at` is the latest poll it includes, and readers bring it up
  to date from the packed samples of the polls since (`catch_up`). The older form, a bare
  array of `[port_id, state_polls, recent]`, was written at every poll.
JSON text in a bytea, not jsonb: nobody queries inside it, so the database neither parses nor
rebuilds it. Encoded with orjson; a column holding a counter past 64 bits (allowed up to
4 x 2^64, schema.py), which orjson cannot write and would read back as a float, is written by
the standard library with a leading space, which tells to read it with it too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson
from django.db.models import QuerySet

from collectors.facts import XMIT_WAIT

from .models import Node, NodeHwReadings, NodeReadings, Port
from .ringcolumns import OTHER, Ring

log = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
BIG = b" "  # leads a column written by json (integers past 64 bits)
# What decode gives per port, in order; a port without history reads as never judged.
FIELDS = ("last_collected_at", "state_polls", "counters", "counters_ext", "hw_counters", "recent")
# The longest a node's history goes unwritten, in seconds of its own polls: a reader replays at most
# this much (12 polls at 10 s) of packed samples, and a busy port's hour-long ring (2.4 kB of JSON as columns)
# is rewritten once in 12 polls instead of at every one.
CHECKPOINT_S = 120.0
# What reading a row that is not as this module writes it raises (orjson's and json's errors are ValueErrors).
UNREADABLE = (ValueError, TypeError, KeyError, IndexError)

_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def encode(ports: Iterable[Port], at: float | None = None) -> dict[str, bytes]:
    """The NodeReadings columns for these ports (all of a node's): {"counters": ..., "history": ...}; their
    NodeHwReadings' is `encode_hw`.

    `at`: the latest poll (epoch seconds) the history includes, None when it is current."""
    ports = list(ports)
    return {"counters": encode_counters(ports), "history": encode_history(ports, at)}


def encode_counters(ports: list[Port]) -> bytes:
    names: dict[tuple[str, ...], int] = {}  # a counter set's names in its order -> k, its place in "names"
    entries = [
        [
            p.pk,
            None if p.last_collected_at is None else (p.last_collected_at - EPOCH) // US,
            _values(p.counters, names),
            _values(p.counters_ext, names),
            None,  # (in the node's NodeHwReadings row)
            last_wait(p),
        ]
        for p in ports
    ]
    return _dump({"names": list(names), "ports": entries})


def encode_hw(ports: list[Port]) -> bytes:
    """NodeHwReadings.hw_counters for these ports: each port's hw_counters, their names once as in `counters`."""
    names: dict[tuple[str, ...], int] = {}
    entries = [[p.pk, _values(p.hw_counters, names)] for p in ports]
    return _dump({"names": list(names), "ports": entries})


def _values(counters: dict | None, names: dict[tuple[str, ...], int]) -> list | None:
    """[k, value, ...] of a counter set: its names are the k-th of `names` (added when new)."""
    if counters is None:
        return None
    layout = tuple(counters)
    k = names.get(layout)
    if k is None:
        k = names[layout] = len(names)
    return [k, *counters.values()]


def _named(values: list | None, names: list[list[str]]) -> dict | None:
    """A counter set as _values wrote it, as name -> value."""
    if values is None:
        return None
    it = iter(values)
    return dict(zip(names[next(it)], it, strict=False))  # (~0.2 µs a set less than strict: rows only we write)


def _entries(
    counters: bytes | memoryview, hw: bool = True, hw_column: bytes | memoryview | None = None
) -> Iterator[tuple]:
    """(port id, µs or None, counters, counters_ext, hw_counters, wait) of each port of a counters value, either
    form, its hw_counters from `hw_column` when that is set; hw_counters None unless `hw`."""
    document = _load(counters)
    if type(document) is list:  # the older form: sets named in each entry
        for pk, us, counters_, ext, hw_counters, *wait in document:
            yield pk, us, counters_, ext, hw_counters if hw else None, wait[0] if wait else None
        return
    names = document["names"]
    apart = _hw_by_port(hw_column) if hw and hw_column is not None else None
    for pk, us, counters_, ext, hw_counters, wait in document["ports"]:
        if not hw:
            hw_counters = None
        elif apart is not None:
            hw_counters = apart.get(pk)
        else:
            hw_counters = _named(hw_counters, names)
        yield pk, us, _named(counters_, names), _named(ext, names), hw_counters, wait


def _hw_by_port(hw_column: bytes | memoryview) -> dict[int, dict | None]:
    """Port id -> hw_counters of an hw_counters column; one that cannot be read costs only them, said in the log."""
    try:
        document = _load(hw_column)
        names = document["names"]
        return {pk: _named(values, names) for pk, values in document["ports"]}
    except UNREADABLE as e:
        log.warning("a node's readings: its hw_counters cannot be read (%r): its ports' hw_counters are unknown", e)
        return {}


def last_wait(port: Port) -> list | None:
    """[port_xmit_wait counts or None, seconds] of the port's last poll, from its ring's last entry (ingest appends
    every poll there: telemetry/storage/ring.py, a count left out moved 0, None is unknown); None where that
    poll is not known: never polled twice, or a port that does not count waits."""
    ring, at = port.recent, port.last_collected_at
    if not ring or at is None or XMIT_WAIT not in (port.counters or {}):
        return None
    if type(ring) is Ring and ring.waits[-1] != OTHER:  # (its columns read, no entry made)
        ts, seconds, count = ring.times[-1], ring.intervals[-1], ring.waits[-1]
    else:
        ts, seconds, deltas = ring[-1]
        count = deltas.get(XMIT_WAIT, 0)
    if abs(ts - at.timestamp()) > 1e-3:
        return None  # the last poll left no entry (no interval: the port's first)
    return [count, seconds]


def encode_history(ports: list[Port], at: float | None) -> bytes:
    entries = [
        [p.pk, p.state_polls, r.columns() if type(r := p.recent) is Ring else r, p.state_id, p.phys_state_id]
        for p in ports
    ]
    return _dump({"at": None if at is None else round(at * 1_000_000), "ports": entries})


def _dump(entries: list) -> bytes:
    try:
        return orjson.dumps(entries)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits
        return BIG + _dumps(entries).encode()


def _load(data: bytes | memoryview) -> list | dict:
    raw = bytes(data)  # PostgreSQL's driver gives a memoryview
    return json.loads(raw) if raw.startswith(BIG) else orjson.loads(raw)


def decode(
    counters: bytes | memoryview | None, history: bytes | memoryview | None, hw_column: bytes | memoryview | None = None
) -> dict[int, list]:
    """port id -> [last_collected_at (datetime or None), state_polls, counters, counters_ext, hw_counters, recent]
    of a NodeReadings row's columns, the history as of its checkpoint (see `catch_up`)."""
    return _decode(counters, history, hw_column)[0]


def counters_of(
    counters: bytes | memoryview | None, hw: bool = True, hw_column: bytes | memoryview | None = None
) -> Iterator[tuple]:
    """(port id, counters, counters_ext, hw_counters, wait) of each port of a NodeReadings.counters value (and its
    hw_counters column): decode's counters alone and the last poll's wait (`last_wait`), without the history or a
    datetime per port (what /metrics reads, a node at a time). hw_counters None unless `hw`: not named when not
    asked for. A row that cannot be read gives the ports read before the fault, and the log says so."""
    if counters is None:
        return
    try:
        for pk, _, counters_, ext, hw_counters, wait in _entries(counters, hw, hw_column):
            yield pk, counters_, ext, hw_counters, wait
    except UNREADABLE as e:
        log.warning("a node's readings: its counters cannot be read (%r): its ports' counters are left out", e)


def _decode(
    counters, history, hw_column=None, node_id: int | None = None
) -> tuple[dict[int, list], int | None, dict[int, list]]:
    """(decode's result, the checkpoint's `at` in µs or None, port id -> [state_id, phys_state_id] at it).

    A column that cannot be read (a hand edit, a disk's damage) costs only what it holds, said in the log: a
    history, the ports' polls in their state and rings, begun afresh (and the checkpoint written again at the
    next poll, its `at` unknown); the counters, every reading, so that each port's next poll is its first."""
    if counters is None:
        return {}, None, {}
    at, kept, states = None, {}, {}
    if history is not None:
        try:
            at, kept, states = _history(history)
        except UNREADABLE as e:
            log.warning("node %s: its readings' history cannot be read (%r): its ports' rings begin afresh", node_id, e)
            at, kept, states = None, {}, {}
    out = {}
    try:
        for pk, us, counters_, ext, hw, _ in _entries(counters, True, hw_column):
            polls, recent = kept.get(pk, (1, []))
            out[pk] = [None if us is None else EPOCH + us * US, polls, counters_, ext, hw, recent]
    except UNREADABLE as e:
        why = "each port's next poll is its first"
        log.warning("node %s: its readings' counters cannot be read (%r): %s", node_id, e, why)
        return {}, None, {}
    return out, at, states


def _history(history: bytes | memoryview) -> tuple[int | None, dict[int, tuple], dict[int, list]]:
    at, kept, states = None, {}, {}
    raw = _load(history)
    if type(raw) is list:  # the older form, written at every poll: current
        kept = {pk: (polls, _ring(recent)) for pk, polls, recent in raw}
    else:
        at = raw["at"]
        for pk, polls, recent, state_id, phys_state_id in raw["ports"]:
            kept[pk] = (polls, _ring(recent))
            states[pk] = [state_id, phys_state_id]
    return at, kept, states


def _ring(recent: list | dict) -> list | Ring:
    """A ring as a checkpoint holds it, as a Port does: a Ring when it can be one (a ring written as entries,
    by a release before, becomes one here, its lists dropped a node at a time)."""
    return Ring.from_columns(recent) if type(recent) is dict else Ring.of(recent) or recent


def of_nodes(
    node_ids: Iterable[int] | QuerySet | None, history: bool = True, checkpoints: dict | None = None
) -> dict[int, list]:
    """The readings of every port of these nodes (None: all nodes), by port id; without `history`, its
    state_polls and ring are not read (1 and []). With history they are brought up to date from the
    samples since their checkpoint, and `checkpoints`, when given, is filled with node id ->
    [the checkpoint's latest poll, the latest poll replayed] (epoch seconds; None, None for the older form)."""
    rows = NodeReadings.objects.order_by()
    if node_ids is not None:  # ids, or a query of them (a subquery)
        rows = rows.filter(node_id__in=node_ids if isinstance(node_ids, QuerySet) else list(node_ids))
    out: dict[int, list] = {}
    if not history:
        for node_id, counters, hw in rows.values_list("node_id", "counters", "hw__hw_counters").iterator(
            chunk_size=500
        ):
            out.update(_decode(counters, None, hw, node_id)[0])
        return out
    states: dict[int, list] = {}
    found = {} if checkpoints is None else checkpoints
    columns = rows.values_list("node_id", "counters", "history", "hw__hw_counters")
    for node_id, counters, kept, hw in columns.iterator(chunk_size=500):
        by_port, at, at_states = _decode(counters, kept, hw, node_id)
        out.update(by_port)
        states.update(at_states)
        found[node_id] = [None, None] if at is None else [at / 1_000_000] * 2
    _catch_up(out, states, found)
    return out


# How a checkpoint is brought up to its node's last poll (by_port, states, checkpoints, as `of_nodes` passes
# them): fabricweb.telemetry.storage.catchup.catch_up, which the telemetry app hands over when Django starts
# (TelemetryConfig.ready). Telemetry builds on inventory, not the other way: nothing here imports it.
CatchUp = Callable[[dict[int, list], dict[int, list], dict[int, list]], None]


@dataclass(slots=True)
class Replay:
    """The catch-up this process was handed: one object, set once by TelemetryConfig.ready(), read at every use."""

    catch_up: CatchUp | None = None


REPLAY = Replay()


def replay_with(catch_up: CatchUp) -> None:
    """Set how history checkpoints are brought up to date (the telemetry app does, at start-up)."""
    REPLAY.catch_up = catch_up


def _catch_up(by_port: dict[int, list], states: dict[int, list], checkpoints: dict[int, list]) -> None:
    if REPLAY.catch_up is None:
        raise RuntimeError("readings: no catch-up set (the telemetry app sets it when Django starts)")
    REPLAY.catch_up(by_port, states, checkpoints)


def of_node(node: Node) -> dict[int, list]:
    """The readings of a node read with select_related("readings__hw"), by port id."""
    try:
        row = node.readings
    except NodeReadings.DoesNotExist:  # never polled
        return {}
    try:
        hw = row.hw.hw_counters
    except NodeHwReadings.DoesNotExist:  # (written before its hw_counters had a row of their own)
        hw = None
    by_port, at, states = _decode(row.counters, row.history, hw, node.pk)
    if at is not None:
        _catch_up(by_port, states, {node.pk: [at / 1_000_000] * 2})
    return by_port


def set_on(port: Port, values: list | None) -> None:
    """Give `port` its readings (None: never polled)."""
    if values is None:
        return
    for name, value in zip(FIELDS, values, strict=True):
        setattr(port, name, value)


def attach(ports: Iterable[Port], by_port: Mapping[int, list] | None = None) -> list[Port]:
    """Set the readings of `ports` (rows read with the ORM), from `by_port` or read for their nodes."""
    ports = list(ports)
    if by_port is None:
        node_ids = {p.device.node_id for p in ports} if all(_device_loaded(p) for p in ports) else None
        if node_ids is None:
            node_ids = set(Port.objects.filter(pk__in=[p.pk for p in ports]).values_list("device__node_id", flat=True))
        by_port = of_nodes(node_ids) if ports else {}
    for p in ports:
        set_on(p, by_port.get(p.pk))
    return ports


def _device_loaded(port: Port) -> bool:
    return Port.device.is_cached(port)
