"""The overview's model (the hosts' counts and the port grid's HTML), built once per change of the data
and kept in this process.

At 20,000 ports building it from scratch is most of the page (every port read, judged and drawn: ~200 ms;
the plain overview draws again only the hosts whose ports changed: hostgrid.py), yet it changes only when
the data does: a batch ingested (a host's or an agentless adapter's last_ingested_at: the fabric collector's
sweeps write the adapters'), a sweep no longer reaching an adapter (FabricNode.missing_since), a node marked
stale (health/records/staleness.py), an event opened, resolved or changed in severity, a baseline accepted or undone
(it writes the port's expected link at once; a policy edited in the admin reaches the ports at their next
ingest). `fingerprint()` reads all of these in one small query at every request; a model built under another
fingerprint is never served.
Each gunicorn worker keeps its own models and checks the fingerprint itself, so no worker serves a model
older than the database's. The model holds nothing of a user: counts and grid are the same for every
viewer; who may act, acknowledgements and silences are in the problem list, built for each request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

from django.db import connection
from django.utils.safestring import SafeString

from fabricweb.fabric.models import FabricNode
from fabricweb.health.models import Event, LinkPolicy
from fabricweb.inventory.models import Node

from . import grid, hostgrid, porthealth
from .oneview import one_view

KEEP = 4  # models kept per process (the plain overview and a few filters): ~3 MB of HTML each at 20,000 ports
_FILTERS = ("node", "device", "state", "speed", "width", "hca", "layer", "problems")  # not the list's pages


class Model(NamedTuple):
    counts: porthealth.Counts
    grid: SafeString
    shown_ports: int


class KeptModels:
    """This process's overview models (docs/architecture.md, "What processes keep in memory"), shared by the
    threads of a web process: (database, fingerprint, filters) -> Model. Owner: this module; bound KEEP, least
    recently used out; a model of another database or fingerprint is dropped when one is kept under a new one,
    and never served; forget() drops them all (the tests' conftest, after each test)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.forget()

    def forget(self) -> None:
        with self._lock:
            self._models: OrderedDict[tuple, Model] = OrderedDict()

    def get(self, wanted: tuple) -> Model | None:
        with self._lock:
            model = self._models.get(wanted)
            if model is not None:
                self._models.move_to_end(wanted)
            return model

    def put(self, wanted: tuple, model: Model) -> None:
        """Keep `model` as `wanted`'s ((database, fingerprint), filters), dropping those of another key."""
        key = wanted[0]
        with self._lock:
            for old in [k for k in self._models if k[0] != key]:  # the data changed: those will not be asked again
                del self._models[old]
            self._models[wanted] = model
            while len(self._models) > KEEP:
                self._models.popitem(last=False)


KEPT = KeptModels()


def fingerprint() -> tuple:
    """What the model is built from, in one query: the hosts and adapters (how many, how many adapters, the
    newest ingest, which are stale), the fabric nodes the sweeps no longer reach (an adapter's ports are unknown
    then), the open events (which, and how many of each severity) and the link policies (baselines)."""
    sql, params = fingerprint_query()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return tuple(cursor.fetchone())


def fingerprint_query() -> tuple[str, list]:
    """fingerprint()'s SQL and parameters, on the default connection. The fabric nodes no longer reached are a
    few of tens of thousands: read through FabricNode's partial index of them (fabric_node_missing), not a scan."""
    q = connection.ops.quote_name
    node, event, policy, swept = (q(m._meta.db_table) for m in (Node, Event, LinkPolicy, FabricNode))
    hosts = f"FROM {node} WHERE {q('kind')} IN (%s, %s)"
    missing = f"FROM {swept} WHERE {q('missing_since')} IS NOT NULL"
    open_events = f"FROM {event} WHERE {q('resolved_at')} IS NULL"
    per_severity = f"SUM(CASE WHEN {q('severity')} = %s THEN 1 ELSE 0 END)"
    sql = (
        f"SELECT (SELECT COUNT(*) {hosts}), (SELECT MAX({q('last_ingested_at')}) {hosts}),"
        f" (SELECT COUNT(*) {hosts} AND {q('stale')}), (SELECT SUM({q('id')}) {hosts} AND {q('stale')}),"
        f" (SELECT COUNT(*) FROM {node} WHERE {q('kind')} = %s),"
        f" (SELECT COUNT(*) {missing}), (SELECT SUM({q('id')}) {missing}),"
        f" (SELECT MAX({q('id')}) FROM {event}),"
        f" (SELECT COUNT(*) {open_events}), (SELECT SUM({q('id')}) {open_events}),"
        f" (SELECT {per_severity} {open_events}), (SELECT {per_severity} {open_events}),"
        f" (SELECT COUNT(*) FROM {policy}), (SELECT MAX({q('id')}) FROM {policy}),"
        f" (SELECT MAX({q('accepted_at')}) FROM {policy})"
    )
    severities = [Event.Severity.CRITICAL.value, Event.Severity.WARNING.value]
    return sql, [*porthealth.GRID_KINDS] * 4 + [porthealth.ADAPTER, *severities]


def overview(filters: dict) -> Model:
    """The counts and the grid of the ports matching `filters` (PortFilter's cleaned data), as of now."""
    # The fingerprint, the counts and the grid from one view of the database (oneview.py): a model kept under
    # a fingerprint is made of what that fingerprint saw, and its counts agree with its grid.
    with one_view():
        # The database too: one process may reach several (the tests' SQLite and PostgreSQL).
        key = (connection.vendor, connection.settings_dict["NAME"], fingerprint())
        wanted = (key, tuple(filters.get(name) for name in _FILTERS))
        model = KEPT.get(wanted)
        if model is not None:
            return model
        if any(wanted[1]):
            counts, cells = porthealth.fabric_view(filters)
            model = Model(counts, grid.render(cells), len(cells))
        else:  # the plain overview: only the hosts whose ports changed are drawn again
            model = Model(*hostgrid.build())
    KEPT.put(wanted, model)
    return model
