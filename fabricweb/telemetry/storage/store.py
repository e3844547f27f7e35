"""Database side of ingest: lock and load the rows of the nodes in a batch, write the changes back.

A batch costs a fixed handful of statements whatever its size: lock nodes, load devices,
load ports, then one statement per kind of write. Must run inside a transaction.
Samples (one packed row per node-poll) and port updates bypass the ORM's per-object
machinery (see `write`): at one row per port per poll, that machinery was most of the cost of ingest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from django.db import connection, models

from fabricweb.inventory import readings
from fabricweb.inventory.models import Device, Node, NodeHwReadings, NodeReadings, Port

from ..models import NodePoll
from ..validation.portfields import LINK_FIELDS
from . import rowcache
from .apply import Changes, NodeRows
from .packing import pack

NODE_FIELDS = [
    "last_collected_at", "last_ingested_at", "stale", "read_errors", "source", "ingest_token",
    "refused_reason", "refused_at", "refused_snapshots", "norm_hold_reason", "norm_hold_since",
]  # fmt: skip
DEVICE_FIELDS = [
    "node_type_id",
    "node_type_name",
    "node_guid",
    "sys_image_guid",
    "fw_ver",
    "hca_type",
    "board_id",
    "hw_rev",
    "node_desc",
    "pci_address",
    "pci_current_gts",
    "pci_current_width",
    "pci_max_gts",
    "pci_max_width",
    "numa_node",
    "pcie_path",
    "hw_counters",
    "verbs",
    "disagreements",
    "vanished_at",
    "missed_polls",
]
# What ingest owns of a port row, written only when it changed (what changes at every poll is in
# NodeReadings). expected_* belong to the health rules, which may write them in the same
# transaction: never written here.
PORT_RARE_FIELDS = ["capped", "last_reset_at", "missed_polls", "vanished_at"]
PORT_LINK_FIELDS = [*LINK_FIELDS, "best_speed", "best_lanes", "ever_up"]
PORT_GONE_FIELDS = ["vanished_at", "missed_polls"]


def load_nodes(first_seen: dict[str, datetime], cache: rowcache.RowCache | None = None) -> dict[str, NodeRows]:
    """Lock (PostgreSQL: FOR UPDATE, in name order so two workers cannot deadlock) and load the named
    nodes with their devices and ports; a node not yet known is created: it registers itself.

    With a `cache`, a node whose rows this process wrote last (rowcache) reuses them and
    only its id and token are read; the rows are out of the cache until `cache.keep` puts them back.
    """
    names = sorted(first_seen)
    locked = _lock_nodes(names)  # name -> (id, ingest_token)
    rows: dict[str, NodeRows] = {}
    unloaded: dict[int, NodeRows] = {}
    for name, (pk, token) in locked.items():
        # Its token as this process wrote it: the node row is as this process holds it, and all below it.
        held = cache.take(name, pk, token) if cache is not None else None
        if held is not None:
            rows[name] = held
    reread = [pk for name, (pk, _) in locked.items() if name not in rows]
    nodes = {n.name: n for n in Node.objects.filter(pk__in=reread)} if reread else {}
    created = [name for name in names if name not in locked]
    if created:
        # Another worker may register the same node at the same moment: let its row win.
        Node.objects.bulk_create([Node(name=n, first_seen_at=first_seen[n]) for n in created], ignore_conflicts=True)
        for node in Node.objects.select_for_update().filter(name__in=created).order_by("name"):
            if cache is not None:
                cache.take(node.name, node.pk, None)  # (a miss: and rows of an older node of that name go)
            nodes[node.name] = node
    for name, node in nodes.items():
        rows[name] = unloaded[node.pk] = NodeRows(node, new=name in created)
    if unloaded:
        _load_devices_and_ports(unloaded)
    return {name: rows[name] for name in names}


def _lock_nodes(names: list[str]) -> dict[str, tuple[int, int | None]]:
    """Lock the named nodes' rows (PostgreSQL: FOR UPDATE, in name order so two workers cannot deadlock;
    SQLite locks the whole database for the transaction): name -> (id, ingest_token). Only these two
    columns: most nodes of a batch are held in memory (rowcache) and need nothing more."""
    if not names:
        return {}
    qn = connection.ops.quote_name
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    sql = (
        f"SELECT {qn('name')}, {qn('id')}, {qn('ingest_token')} FROM {qn(Node._meta.db_table)} "
        f"WHERE {qn('name')} IN ({', '.join(['%s'] * len(names))}) ORDER BY {qn('name')}{lock}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, names)
        return {name: (pk, token) for name, pk, token in cursor.fetchall()}


def _load_devices_and_ports(by_id: dict[int, NodeRows]) -> None:
    # No ORDER BY in SQL: the models' default orderings join node (and device) rows only to sort.
    # Sorted here instead, so the dicts hold devices by name and ports by number as before.
    for device in sorted(Device.objects.filter(node_id__in=by_id).order_by(), key=_by_name):
        node_rows = by_id[device.node_id]
        device.node = node_rows.node
        node_rows.devices[device.name] = device
    devices = {d.pk: d for r in by_id.values() for d in r.devices.values()}
    ports = Port.objects.filter(device_id__in=devices).order_by()
    checkpoints: dict[int, list] = {}
    polled = readings.of_nodes(by_id, checkpoints=checkpoints)  # each port's baseline: counters, ring, state_polls
    for node_id, (at, replayed) in checkpoints.items():
        if at is not None:  # (else its history is in the older form: written again at this poll)
            node_rows = by_id[node_id]
            node_rows.checkpoint_at, node_rows.seen_until, node_rows.checkpoint_due = at, replayed, False
    for port in sorted(ports, key=lambda p: (devices[p.device_id].name, p.number)):
        device = devices[port.device_id]
        port.device = device
        readings.set_on(port, polled.get(port.pk))
        by_id[device.node_id].ports.setdefault(device.name, {})[port.number] = port


def _by_name(row: Device) -> str:
    return row.name


def write(changes: Changes) -> None:
    """Insert new devices, then new ports (their ids are needed by samples), then samples; update the rest."""
    if changes.new_devices:
        Device.objects.bulk_create(changes.new_devices)
    if changes.new_ports:
        Port.objects.bulk_create(changes.new_ports)
    if changes.samples:
        insert_samples(changes.samples)
    if changes.readings:
        write_readings(changes.readings.values())
    if changes.nodes:
        for node in changes.nodes.values():
            node.ingest_token = rowcache.new_token()
        update_rows(Node, changes.nodes.values(), NODE_FIELDS)
    if changes.gpus:
        update_rows(Node, changes.gpus.values(), ["gpus"])
    if changes.devices:
        update_rows(Device, changes.devices.values(), DEVICE_FIELDS)
    if changes.rare:
        update_rows(Port, changes.rare.values(), PORT_RARE_FIELDS)
    if changes.links:
        update_rows(Port, changes.links.values(), PORT_LINK_FIELDS)
    if changes.gone:
        update_rows(Port, changes.gone.values(), PORT_GONE_FIELDS)


def write_readings(nodes: Iterable[NodeRows]) -> None:
    """One NodeReadings row per node, all of its ports (present or not) in it: its counters at every poll,
    its history when a checkpoint is due (readings.CHECKPOINT_S, apply.NodeRows); one statement per kind. Its
    NodeHwReadings row when its hw_counters are due (NodeRows.hw_due), after it."""
    whole, counters_only, hw = [], [], []
    for r in nodes:
        ports = [p for ports in r.ports.values() for p in ports.values()]
        counters = readings.encode_counters(ports)
        if r.hw_due:
            hw.append((r.node.pk, readings.encode_hw(ports)))
            r.hw_due = False
        seen = r.seen_until
        if (
            r.checkpoint_due
            or r.checkpoint_at is None
            or seen is None
            or seen - r.checkpoint_at >= readings.CHECKPOINT_S
        ):
            whole.append((r.node.pk, counters, readings.encode_history(ports, seen)))
            r.checkpoint_at, r.checkpoint_due = seen, False
        else:
            counters_only.append((r.node.pk, counters))
    qn = connection.ops.quote_name
    table = qn(NodeReadings._meta.db_table)
    insert = f"INSERT INTO {table} (node_id, counters, history)"
    upsert = "ON CONFLICT (node_id) DO UPDATE SET counters = EXCLUDED.counters, history = EXCLUDED.history"
    update = f"UPDATE {table} SET counters = "
    if connection.vendor == "postgresql":
        if whole:
            _server_bound(
                f"{insert} SELECT * FROM unnest(%b::bigint[], %b::bytea[], %b::bytea[]) {upsert}",
                [list(column) for column in zip(*whole, strict=True)],
            )
        if counters_only:
            _server_bound(
                f"{update} v.counters FROM unnest(%b::bigint[], %b::bytea[]) AS v(id_, counters) "
                f"WHERE {table}.node_id = v.id_",
                [list(column) for column in zip(*counters_only, strict=True)],
            )
    else:
        with connection.cursor() as cursor:
            if whole:
                cursor.executemany(f"{insert} VALUES (%s, %s, %s) {upsert}", whole)
            if counters_only:
                cursor.executemany(f"{update} %s WHERE node_id = %s", [(c, n) for n, c in counters_only])
    if hw:
        _write_hw(hw)


def _write_hw(rows: list[tuple[int, bytes]]) -> None:
    """(node id, hw_counters column) of nodes whose NodeReadings row exists: their NodeHwReadings rows."""
    qn = connection.ops.quote_name
    table = qn(NodeHwReadings._meta.db_table)
    insert = f"INSERT INTO {table} (readings_id, hw_counters)"
    upsert = "ON CONFLICT (readings_id) DO UPDATE SET hw_counters = EXCLUDED.hw_counters"
    if connection.vendor == "postgresql":
        _server_bound(
            f"{insert} SELECT * FROM unnest(%b::bigint[], %b::bytea[]) {upsert}",
            [list(column) for column in zip(*rows, strict=True)],
        )
        return
    with connection.cursor() as cursor:
        cursor.executemany(f"{insert} VALUES (%s, %s) {upsert}", rows)


def insert_samples(polls: dict[tuple[int, datetime], list[tuple[Port, tuple, list]]]) -> None:
    """One packed row per node and poll (packing.py), from `Changes.samples`; after the new ports' inserts, which
    gave them their ids.

    PostgreSQL: COPY, several times faster than INSERT; elsewhere one prepared INSERT for all rows.
    """
    rows = [
        (node_id, ts, pack([(port.id, head, deltas) for port, head, deltas in samples]))
        for (node_id, ts), samples in polls.items()
        if samples
    ]
    qn = connection.ops.quote_name
    table = qn(NodePoll._meta.db_table)
    columns = "node_id, ts, ports"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Django does not wrap COPY: map its errors to django.db's like any other statement.
            with connection.wrap_database_errors, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        adapt = connection.ops.adapt_datetimefield_value
        cursor.executemany(
            f"INSERT INTO {table} ({columns}) VALUES (%s, %s, %s)", [(n, adapt(ts), p) for n, ts, p in rows]
        )


# Compact, and without the cycle check (decoded JSON has no cycles): half the time of json.dumps.
_to_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _adapter(field: models.Field):
    """How a value of `field` is passed to the driver in raw SQL, or None when it passes as it is."""
    kind = field.get_internal_type()
    if kind == "JSONField":
        # NULL for None in a nullable column, as the ORM does; JSON text otherwise.
        return lambda v: None if v is None else _to_json(v)
    if kind == "DateTimeField" and connection.vendor != "postgresql":
        return connection.ops.adapt_datetimefield_value
    return None


def update_rows(model: type[models.Model], objs: Iterable[models.Model], fields: list[str]) -> None:
    """UPDATE `fields` of rows by primary key in one statement.

    PostgreSQL: one UPDATE joined to the new values passed as one array per column, in
    binary (%b: no quoting of kilobytes of JSON text); elsewhere one prepared UPDATE
    executed per row. Django's bulk_update builds a CASE WHEN per row and field, which
    cost about a millisecond of Python per port.
    """
    objs = list(objs)
    meta = model._meta
    qn = connection.ops.quote_name
    cols = [meta.get_field(f) for f in fields]
    adapters = [(c.attname, _adapter(c)) for c in cols]
    values = [
        [adapt(getattr(o, name)) for o in objs] if adapt else [getattr(o, name) for o in objs]
        for name, adapt in adapters
    ]
    ids = [o.pk for o in objs]
    if connection.vendor == "postgresql":
        types = [c.db_type(connection) for c in cols]
        names = [qn(c.column) for c in cols]
        sql = (
            f"UPDATE {qn(meta.db_table)} AS t SET {', '.join(f'{n} = v.{n}' for n in names)} "
            f"FROM unnest(%b::bigint[], {', '.join(f'%b::{t}[]' for t in types)}) AS v(id_, {', '.join(names)}) "
            f"WHERE t.{qn(meta.pk.column)} = v.id_"
        )
        _server_bound(sql, [ids, *values])
        return
    sets = ", ".join(f"{qn(c.column)} = %s" for c in cols)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {qn(meta.db_table)} SET {sets} WHERE {qn(meta.pk.column)} = %s", [*zip(*values, ids, strict=True)]
        )


def _server_bound(sql: str, params: list) -> None:
    """Execute on PostgreSQL with parameters bound by the server.

    Django's psycopg cursors bind on the client: they would quote megabytes of arrays into
    the SQL text and make the server parse and plan them as literals.
    """
    import psycopg  # only here: the project runs on SQLite without it

    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params)
