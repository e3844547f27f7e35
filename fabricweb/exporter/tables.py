"""Everything /metrics reads from the database, in one place: the current-state tables as plain rows.

Only the columns a scrape needs, as tuples (values_list, no model instances). Where a port's
raw counters live (its node's NodeReadings row, fabricweb.inventory.readings) is known here
and nowhere else in the exporter: the rows carry them as dicts, or None.

The JSON columns are read as text and decoded with orjson: 80,000 documents at 20,000 ports,
where json.loads behind Django's JSONField took a quarter of the scrape (BENCHMARKS.md). The
port and device rows are fetched by the SQL Django compiles, on its chunked (server-side on
PostgreSQL) cursor, without Django's per-row converters (a third of the health scrape's
reading): the rows carry the driver's values, so a boolean may be 0/1 and a timestamp text,
and the collector only tests those for truth and for None.

Nodes come with their kind (host, switch, fabric collector) and whether they are stale (portfacts'
node_stale_q, the one way staleness comes in): a switch's ports are rows of its one device
(collectors.facts.SWITCH_DEVICE) like a host's, and `switches()` adds what the fabric view keeps of each
switch (its LID, description, and since when the sweeps no longer reach it). Up, degraded and whether a
port has a link are fabricweb.inventory.portfacts'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from operator import itemgetter

import orjson
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import BooleanField, Count, ExpressionWrapper, F, Func, Q, TextField
from django.db.models.functions import Cast
from django.db.models.query import QuerySet

from fabricweb.fabric.models import FabricNode
from fabricweb.health.models import Event
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Device, Node, NodeReadings, Port

PORT_FIELDS = ("id", "device_id", "number", "vanished_at", "rate_gbps", "health", "speaks")
# What a port's health series are made of (hostports.port_health, switchports.switch_port_health,
# links.link_health) but its rate, as one JSON array text made by the database (`health`, JSONArrayText):
# one column to fetch and one string to hash instead of seventeen, and injective (JSON), so it can key what
# is kept across scrapes. The rate, a float, is a column of its own: JSON would not be sure to carry it bit for bit.
# `up` and `degraded` are the port row's (portfacts.UP_FLAG, DEGRADED_FLAG); then the link as the fabric
# view left it (fabricweb.fabric.links): the far end in words, what both ends support, and the far end's
# host or switch name and kind (`peer_node`, `peer_kind`: NULL for a channel adapter fabricweb has no agent
# on); last whether the port has a link at all (portfacts.HAS_LINK: a DOWN port's rate is no link) and
# whether it should be up (portfacts.SHOULD_BE_UP: else down is "not connected", not an outage).
PORT_HEALTH_FIELDS = (
    "state_id", "phys_state_id", "link_layer", "lanes", "speed", "expected_speed", "expected_lanes",
    "expected_source", "capped", "up", "degraded", "peer_label", "capable_speed", "capable_lanes",
    "peer_node", "peer_kind", "has_link", "should_be_up",
)  # fmt: skip
# `speaks`: the port speaks for a cable the fabric view has seen (Port.link_owner, and a far end
# named): the row of one link series (links.link_health); a boolean column, so the other rows cost
# nothing more.
SPEAKS = ExpressionWrapper(Q(link_owner=True) & ~Q(peer_label=""), output_field=BooleanField())
# Where the counters start when they are asked for: row[COUNTERS_AT] capped (a column), then the
# counters, counters_ext and hw_counters (the node's readings, without their history), and the last poll's wait.
COUNTERS_AT = len(PORT_FIELDS)
DEVICE_FIELDS = (
    "id", "node_id", "name", "fw_ver", "hca_type", "board_id",
    "pci_current_gts", "pci_current_width", "pci_max_gts", "pci_max_width", "pcie_path_text", "vanished_at",
)  # fmt: skip
# Appended to DEVICE_FIELDS when hw_counters are asked for (?set=hw): row[12].
DEVICE_COUNTER_FIELDS = ("hw_counters",)


class JSONArrayText(Func):
    """The expressions as the text of a JSON array: SQLite's json_array; on PostgreSQL
    json_build_array, a quarter cheaper than Django's JSONArray (jsonb_build_array) at
    20,000 ports, and its text is all /metrics needs."""

    function = "JSON_ARRAY"
    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(
            compiler, connection, function="JSON_BUILD_ARRAY", template="%(function)s(%(expressions)s)::text"
        )


# Parameters PostgreSQL binds in one statement at most (65,535): a longer `in` list (a node glob over a huge
# fabric) goes through Django's cursor, which binds on the client.
MAX_BOUND_PARAMS = 32_000
JSON_FIELDS = frozenset({"capped", "hw_counters"})


def _loads(text: str | None) -> object:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # what orjson refuses (NaN, integers past 64 bits), json reads
        return json.loads(text)


def _rows(queryset: QuerySet, fields: tuple[str, ...]) -> Iterator[tuple]:
    """values_list(*fields), the JSON ones read as text (`json_<name>`) and decoded here."""
    texts = {f"json_{f}": Cast(f, TextField()) for f in fields if f in JSON_FIELDS}
    columns = [f"json_{f}" if f in JSON_FIELDS else f for f in fields]
    positions = [i for i, f in enumerate(fields) if f in JSON_FIELDS]
    rows = queryset.annotate(**texts).values_list(*columns)
    compiler = rows.query.get_compiler(rows.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:  # `in` an empty list
        return
    # The SELECT's own order (Django's values_list reorders its rows to the asked one).
    selected = [alias for _, _, alias in compiler.select]
    pick = itemgetter(*(selected.index(c) for c in columns))
    # A plain cursor: rows are small now (the counters are read from the readings rows), and a server-side
    # cursor outside a transaction is WITH HOLD, which PostgreSQL materializes whole before the first fetch.
    binary = connections[rows.db].vendor == "postgresql" and len(params) <= MAX_BOUND_PARAMS
    with _binary_cursor(rows.db) if binary else connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params, **({"binary": True} if binary else {}))
        while batch := cursor.fetchmany(2000):
            if not positions:
                yield from map(pick, batch)
                continue
            for raw in batch:
                row = list(pick(raw))
                for i in positions:
                    row[i] = _loads(row[i])
                yield tuple(row)


def _binary_cursor(db: str):
    """psycopg's own cursor of PostgreSQL connection `db`, which reads the binary protocol (Django's binds
    on the client, text only): ints, floats and booleans as they are stored, no text to parse (the ports'
    rows at 20,000 ports 0.09 s against 0.12 s). It binds on the server: at most MAX_BOUND_PARAMS."""
    connection = connections[db]
    import psycopg  # only here: the project runs on SQLite without it

    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def nodes() -> Iterable[tuple[int, str, datetime | None, str, str | None, bool, str]]:
    """(id, name, last_ingested_at, kind, guid, stale, refused_reason) of every node (host, switch, fabric
    collector), by name. On PostgreSQL in the binary protocol: a timestamp loaded in C, not parsed from text
    (at 2,500 nodes 10 ms against 35 ms)."""
    stale = ExpressionWrapper(portfacts.node_stale_q(prefix=""), output_field=BooleanField())
    rows = Node.objects.order_by("name").annotate(is_stale=stale)
    fields = ("id", "name", "last_ingested_at", "kind", "guid", "is_stale", "refused_reason")
    if connections[rows.db].vendor == "postgresql":
        return _rows(rows, fields)
    return rows.values_list(*fields)


def has_row_versions() -> bool:
    """Whether the database gives each row version the transaction that wrote it (xmin): PostgreSQL."""
    return connections[Device.objects.db].vendor == "postgresql"


# Row versions (PostgreSQL's xmin, the transaction that wrote the row version) as a number, summed.
# Transaction ids only grow (until a wraparound, after some 4 billion), and a row is only written when
# something in it changed (telemetry.storage): an update or an insert adds a newer id than any it
# replaces or any row already has, so among the same number of rows the sum grows with every write.
# That is what row_versions and node_versions compare, not the ids themselves.
_XMIN = "xmin::text::bigint"


def row_versions() -> tuple | None:
    """PostgreSQL only: what changes whenever any device or port row is written, inserted or deleted: each
    table's row count and summed row versions (one pass over each table: at 20,000 ports ~12 ms). None
    inside a transaction that has written: its own rows carry its id however often it rewrites them."""
    tables = [model._meta.db_table for model in (Device, Port)]
    sums = ", ".join(f"(SELECT count(*)::text || ':' || coalesce(sum({_XMIN}), 0) FROM {t})" for t in tables)
    with connections[Device.objects.db].cursor() as cursor:
        cursor.execute(f"SELECT txid_current_if_assigned(), {sums}")
        writer, *versions = cursor.fetchone()
    return None if writer is not None else tuple(versions)


def node_versions() -> dict[int, tuple]:
    """PostgreSQL only: node id -> what changes whenever one of its device or port rows is written, inserted
    or deleted (as row_versions, per node: at 20,000 ports ~50 ms; fabricweb/exporter/nodeblocks.py)."""
    device, port = Device._meta.db_table, Port._meta.db_table
    sql = (
        f"SELECT d.node_id, count(*), count(p.id), sum(d.{_XMIN}), coalesce(sum(p.{_XMIN}), 0) "
        f"FROM {device} d LEFT JOIN {port} p ON p.device_id = d.id GROUP BY d.node_id"
    )
    with connections[Device.objects.db].cursor() as cursor:
        cursor.execute(sql)
        return {node_id: tuple(rest) for node_id, *rest in cursor.fetchall()}


def switches() -> dict[int, tuple[int | None, str, datetime | None]]:
    """Switch node id -> (LID, description, missing since) as the fabric sweeps keep them."""
    rows = FabricNode.objects.filter(node__isnull=False).order_by()
    return {node_id: rest for node_id, *rest in rows.values_list("node_id", "lid", "description", "missing_since")}


def devices(node_ids: list[int] | None, hw: bool) -> Iterable[tuple]:
    """DEVICE_FIELDS (+ hw_counters) of the devices of `node_ids` (None: all), unordered. The PCIe path
    comes as its JSON text: it keys the device's health row (hostports.device_health) as it is."""
    rows = Device.objects.order_by().annotate(pcie_path_text=Cast("pcie_path", TextField()))
    if node_ids is not None:
        rows = rows.filter(node_id__in=node_ids)
    return _rows(rows, DEVICE_FIELDS + (DEVICE_COUNTER_FIELDS if hw else ()))


def gpus(node_ids: list[int]) -> dict[int, list]:
    """Node id -> its GPUs (Node.gpus: each with `nics`, its relation to each RDMA device), for the nodes
    of `node_ids` that sent them."""
    rows = Node.objects.filter(id__in=node_ids, gpus__isnull=False).order_by()
    return {node_id: value for node_id, value in rows.values_list("id", "gpus") if value}


def ports(device_ids: list[int] | None, counters: bool, hw: bool = False) -> Iterator[tuple]:
    """PORT_FIELDS (+ the counter dicts: counters, counters_ext, and hw_counters with `hw`, else None; and the
    last poll's wait, readings.last_wait) of the ports of `device_ids` (None: all), unordered."""
    rows = Port.objects.order_by().annotate(
        peer_node=F("peer__device__node__name"),
        peer_kind=F("peer__device__node__kind"),
        has_link=portfacts.has_link_flag(),
        should_be_up=portfacts.SHOULD_BE_UP_FLAG,
    )
    rows = rows.annotate(health=JSONArrayText(*PORT_HEALTH_FIELDS), speaks=SPEAKS)
    if device_ids is not None:
        rows = rows.filter(device_id__in=device_ids)
    if not counters:
        yield from _rows(rows, PORT_FIELDS)
        return
    polled = _counters(None if device_ids is None else Device.objects.filter(id__in=device_ids), hw)
    missing = (None, None, None, None)
    for row in _rows(rows, (*PORT_FIELDS, "capped")):
        yield (*row, *polled.get(row[0], missing))


def _counters(devices: QuerySet | None, hw: bool) -> dict[int, tuple]:
    """Port id -> (counters, counters_ext, hw_counters or None, wait) from the readings of the devices' nodes (None:
    all), decoded a node at a time: the hw_counters not asked for (24 a port) are dropped with their node's
    document, never all held at once."""
    rows = NodeReadings.objects.order_by()
    if devices is not None:
        rows = rows.filter(node_id__in=devices.values_list("node_id", flat=True))
    out: dict[int, tuple] = {}
    columns = ("counters", "hw__hw_counters") if hw else ("counters",)
    for document, *hw_column in _documents(rows.values_list(*columns)):
        for pk, counters, counters_ext, hw_counters, wait in readings.counters_of(document, hw, *hw_column):
            out[pk] = (counters, counters_ext, hw_counters, wait)
    return out


def _documents(rows: QuerySet, chunk: int = 500) -> Iterator[tuple]:
    """The binary columns of `rows`, `chunk` rows at a time. On PostgreSQL in the binary protocol: the
    readings' bytea as stored (25 MB at 20,000 ports), which Django's text protocol sends in hex, twice
    the bytes and a decoding pass (at 20,000 ports 0.15 s against 0.03 s, a tenth of the default scrape)."""
    connection = connections[rows.db]
    if connection.vendor != "postgresql":
        yield from rows.iterator(chunk_size=chunk)
        return
    import psycopg  # only here: the project runs on SQLite without it

    try:
        sql, params = rows.query.get_compiler(rows.db).as_sql()
    except EmptyResultSet:
        return
    connection.ensure_connection()
    # A server-side cursor, as Django's iterator: the documents are decoded a chunk at a time, never all held.
    # Outside a transaction it must be WITH HOLD (autocommit would close it at once).
    hold = not connection.in_atomic_block
    with psycopg.ServerCursor(connection.connection, "fabricweb_metrics_readings", withhold=hold) as cursor:
        cursor.execute(sql, params, binary=True)
        while batch := cursor.fetchmany(chunk):
            yield from batch


def open_events() -> Iterable[tuple[int, int | None, int | None, str, str, int]]:
    """(node_id, device_id, port_id, kind, severity, how many) of the open health events."""
    return (
        Event.objects.filter(resolved_at__isnull=True)
        .order_by()
        .values_list("node_id", "device_id", "port_id", "kind", "severity")
        .annotate(n=Count("id"))
    )
