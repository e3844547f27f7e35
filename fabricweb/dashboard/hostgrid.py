"""The plain overview's counts and grid, drawn again only for the hosts whose ports changed.

Its nodes are the hosts and the agentless channel adapters (porthealth.GRID_KINDS): "host" below means either.

After a poll almost every host's cells are as they were: the ingest writes every port, yet its status
rarely moves. One grouped query reads, per host, a fingerprint of exactly what its block is drawn from
(its name, staleness and kind; each port's id, number, status as the database's own CASE gives it
(portfacts.status_case) and device name, written so that no two differing lists read the same), and the
open problems' kinds per port (porthealth.problem_kinds) join it; only the hosts whose fingerprint differs
from the one their kept block was drawn from are read and drawn again. The key kept with a block is made
from the very rows it was drawn from (not from the fingerprint query, read a moment before), so a change
between the two reads is drawn at the next request, never hidden. Each process keeps its own blocks and
checks every host at each build; the blocks hold nothing of a user.
"""

from __future__ import annotations

import threading
from itertools import groupby
from operator import itemgetter

from django.db import connection
from django.utils.safestring import SafeString, mark_safe

from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port

from . import grid, porthealth
from .marks import HEALTHS


class KeptGrid:
    """This process's drawn host blocks (docs/architecture.md, "What processes keep in memory"), shared by the
    threads of a web process: per database (vendor, name), node id -> (key, block's HTML, tally's nonzero
    (health, ports)). Owner: this module; a host's block is drawn again when its key changes, and a build keeps
    only the hosts it drew or kept; forget() drops them all (the tests' conftest, after each test)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.forget()

    def forget(self) -> None:
        with self._lock:
            self._grids: dict[tuple, dict[int, tuple]] = {}

    def get(self, where: tuple) -> dict[int, tuple]:
        with self._lock:
            return self._grids.get(where, {})

    def put(self, where: tuple, blocks: dict[int, tuple]) -> None:
        with self._lock:
            self._grids[where] = blocks


KEPT = KeptGrid()

# Above this many hosts to draw, one read of every port is cheaper than a list of ids to match.
_READ_ALL = 500


def build() -> tuple[porthealth.Counts, SafeString, int]:
    """The hosts' counts, the grid's HTML of every port and how many ports it shows, as now."""
    where = (connection.vendor, connection.settings_dict["NAME"])
    nodes, _stale_names, by_severity = porthealth.host_totals()
    problems = porthealth.problem_kinds()
    kinds_of = _kinds_per_node(problems)
    kept = KEPT.get(where)
    blocks: dict[int, tuple] = {}
    names: dict[int, str] = {}
    redraw = []
    for node_id, name, stale, kind, prints in _fingerprints():
        names[node_id] = name
        block = kept.get(node_id)
        if block is not None and block[0] == (name, stale, kind, prints, kinds_of.get(node_id, ())):
            blocks[node_id] = block
        else:
            redraw.append(node_id)
    if redraw:
        blocks.update(_draw(redraw, len(redraw) > _READ_ALL, problems, kinds_of))
    KEPT.put(where, blocks)
    tally = dict.fromkeys(HEALTHS, 0)
    parts = []
    for node_id in sorted(blocks, key=names.__getitem__):  # code-point order, as fabric_view sorts
        _key, html, counted = blocks[node_id]
        parts.append(html)
        for health, n in counted:
            tally[health] += n
    counts = porthealth.make_counts(nodes, by_severity, tally)
    return counts, mark_safe("".join(parts)), counts.ports


def _fingerprints():
    """(node id, name, stale, kind, its ports' _print()s joined by "," in port id order) of every host with
    ports."""
    ports = portfacts.annotate(porthealth.grid_ports())
    fields = ("device__node_id", "device__node__name", "device__node__stale", "device__node__kind", "pk", "number")
    inner = ports.values_list(*fields, "status", "device__name")
    # _print() in SQL: id, number and status (digits, digits, a word) and the device name after its length
    one = "p.id || ' ' || p.number || ' ' || p.status || ' ' || LENGTH(p.device) || ' ' || p.device"
    sql, params = inner.order_by().query.sql_with_params()
    with_p = f"WITH p (node_id, name, stale, kind, id, number, status, device) AS ({sql})"
    if connection.vendor == "postgresql":
        select = (
            f" SELECT p.node_id, p.name, p.stale, p.kind, STRING_AGG({one}, ',' ORDER BY p.id) FROM p"
            " GROUP BY p.node_id, p.name, p.stale, p.kind"
        )
    else:  # SQLite (3.40) has no ORDER BY in an aggregate; a window has: the host's last row carries it all
        select = (
            " SELECT node_id, name, stale, kind, prints FROM (SELECT p.node_id, p.name, p.stale, p.kind,"
            f" GROUP_CONCAT({one}, ',') OVER host AS prints, LEAD(p.id) OVER host AS next FROM p"
            " WINDOW host AS (PARTITION BY p.node_id ORDER BY p.id)) WHERE next IS NULL"
        )
    with connection.cursor() as cursor:
        cursor.execute(with_p + select, params)
        return [(node_id, name, bool(stale), kind, prints) for node_id, name, stale, kind, prints in cursor.fetchall()]


def _kinds_per_node(problems: dict[int, frozenset[str]]) -> dict[int, tuple]:
    """node id -> ((port id, kinds), ...) of its ports with open problems, in port id order."""
    if not problems:
        return {}
    per_node: dict[int, list] = {}
    for port_id, node_id in Port.objects.filter(pk__in=problems).values_list("pk", "device__node_id"):
        per_node.setdefault(node_id, []).append((port_id, problems[port_id]))
    return {node_id: tuple(sorted(ports)) for node_id, ports in per_node.items()}


def _draw(node_ids: list[int], read_all: bool, problems, kinds_of) -> dict[int, tuple]:
    """The blocks of these hosts, each with the key of the rows it was drawn from."""
    ports = porthealth.grid_ports()
    if not read_all:
        ports = ports.filter(device__node_id__in=node_ids)
    wanted = set(node_ids)
    # ROW_FIELDS (the node's kind is 9), then the node's id (10) and staleness (11)
    rows = [r for r in porthealth.host_port_rows(ports, "device__node_id", "device__node__stale") if r[10] in wanted]
    rows.sort(key=itemgetter(10, 0))
    drawn = {}
    for node_id, of_node in groupby(rows, itemgetter(10)):
        of_node = list(of_node)
        name, kind, stale = of_node[0][1], of_node[0][9], bool(of_node[0][11])
        # An adapter is never a stale host (porthealth.host_totals): its ports say when the sweeps lose it.
        marked = {name} if stale and kind != porthealth.ADAPTER else set()
        tally, cells = porthealth.health_and_cells(of_node, {}, problems, marked, True)
        prints = ",".join(_print(r[0], r[3], r[4], r[2]) for r in of_node)
        key = (name, stale, kind, prints, kinds_of.get(node_id, ()))
        drawn[node_id] = (key, grid.render(cells), tuple((h, n) for h, n in tally.items() if n))
    return drawn


def _print(port_id: int, number: int, status: str, device: str) -> str:
    """One port in a host's fingerprint, as _fingerprints() writes it in SQL."""
    return f"{port_id} {number} {status} {len(device)} {device}"
