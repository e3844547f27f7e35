"""What the pages read, each in a fixed number of queries whatever the size of the fabric.

The overview's nodes (GRID_KINDS) are the hosts and the channel adapters no agent reports (storage servers,
gateways: fabricweb/fabric/adapters.py), whose ports the fabric collector's sweeps read. An adapter's ports are
judged as a host's; it is never a stale host (no agent is polled for it: its ports are unknown when the sweeps
no longer reach it, portfacts.unknown_q), and it is counted apart from the hosts (Counts.adapters).

A port's health is its status (fabricweb/inventory/portfacts/: down, no subnet manager, degraded,
vanished, unknown, up, not connected), "flapping" while a flapping problem is open on it (down at this
poll or up: one mark for the episode), "erroring": a port that is up and at its expected link but
has an open problem of another kind on it or on its device (symbol errors, congestion...), and "PCIe-limited"
when those problems are all its card's PCIe (a PCIe link too slow for it...: marks.PCIE_KINDS). Open events
of severity info (a capped counter, a PCIe link that could be faster) are advice, listed apart from the
problems and marking no port: the grid says what the problem list says.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import NamedTuple

from django.db.models import Case, Count, IntegerField, Max, Q, Value, When

from fabricweb.health.models import Event, Silence, silencing
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Node, Port

from .forms import glob_filter
from .marks import ERRORING, FLAPPING, HEALTHS, PCIE_KINDS, PCIE_LIMITED, QUIET, kind_words

# Link kinds show as the port's colour already; the others make an up port "erroring".
LINK_KINDS = (Kind.DOWN, Kind.DEGRADED, Kind.VANISHED, Kind.NO_SM)
# The nodes on the overview (grid, counts, wall, ports.csv): switches are on /fabric/, a collector has no ports.
GRID_KINDS = (Node.Kind.HOST.value, Node.Kind.ADAPTER.value)
ADAPTER = Node.Kind.ADAPTER.value
ADVICE = Severity.INFO.value  # open events of this severity are advice, not problems
# A link's own faults, judged on one end, that mark the far end of its cable too (linkends.py: the switch page).
BOTH_ENDS = frozenset(
    k.value
    for k in (
        Kind.FLAPPING,
        Kind.SYMBOL_ERRORS,
        Kind.RCV_ERRORS,
        Kind.REMOTE_PHYSICAL_ERRORS,
        Kind.LINK_INTEGRITY,
        Kind.BUFFER_OVERRUN,
    )
)
SEVERITY_ORDER = Case(
    When(severity="critical", then=Value(0)),
    When(severity="warning", then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


@dataclass
class Counts:
    nodes: int  # hosts
    stale_nodes: int  # hosts only: an adapter has no agent to miss its polls
    ports: int
    by_health: dict[str, int]  # every one of HEALTHS: each port counted once
    open_events: dict[str, int]
    last_ingest: datetime | None  # the hosts' newest snapshot (the sweeps' are on /fabric/)
    adapters: int = 0  # channel adapters no agent reports, read by the fabric collector

    def __getattr__(self, name: str) -> int:  # counts.down, counts.no_subnet_manager...
        try:
            return self.__dict__["by_health"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def ports_up(self) -> int:
        """Ports up (portfacts.UP_STATUSES), at their expected link or not, erroring, PCIe-limited or not."""
        h = self.by_health
        return h[ERRORING] + h[PCIE_LIMITED] + sum(h[s] for s in portfacts.UP_STATUSES)


class Cell(NamedTuple):  # a tuple: built 20,000 times a page, 3x cheaper than a frozen dataclass
    node: str
    device: str
    port: int
    health: str  # one of HEALTHS
    stale: bool
    why: str = ""  # the open problems' kinds, in words (the cell's tooltip)
    adapter: bool = False  # a channel adapter no agent reports, read by the fabric collector


_UP = portfacts.Status.UP.value
# Statuses a flapping port shows between polls: it is "flapping" at each of them, not ✕ then ! then ✕.
FLAPPABLE = frozenset(
    s.value for s in (portfacts.Status.DOWN, portfacts.Status.NO_SM, portfacts.Status.DEGRADED, portfacts.Status.UP)
)


def port_health(status: str, kinds=()) -> str:
    """The port's status; "flapping" while a flapping problem is open on it; for a port up at its expected link
    with open problems of other kinds (`kinds`: problem_kinds()'s for this port), "PCIe-limited" when they are
    all its card's PCIe (PCIE_KINDS), else "erroring"."""
    if kinds and FLAPPING in kinds and status in FLAPPABLE:
        return FLAPPING
    if kinds and status == _UP:
        return PCIE_LIMITED if PCIE_KINDS.issuperset(kinds) else ERRORING
    return str(status)


def problem_kinds(**where) -> dict[int, frozenset[str]]:
    """Port id -> the kinds of the open problems (not advice) that mark it: those on the port other than its
    own link state (down, degraded...: its status says them), those on its device as a whole (a PCIe link too
    slow for the port marks each port of the HCA), and the link's problems judged at the far end of its cable
    (BOTH_ENDS: a switch port's symbol errors mark the host port cabled to it, and the other way round).
    `where`: Event filters (node=..., node__kind=...); the far ends' events are read in the same query."""
    rows = Event.objects.filter(resolved_at__isnull=True, device__isnull=False)
    if where:  # its own events, or those whose port's far end is its
        own = Q(**where)
        far = Q(kind__in=BOTH_ENDS, **{f"port__peer__device__{k}": v for k, v in where.items()})
        rows = rows.filter(own | far).annotate(own=Case(When(own, then=Value(True)), default=Value(False)))
    else:
        rows = rows.annotate(own=Value(True))
    rows = (
        rows.exclude(severity=ADVICE)
        .exclude(kind__in=LINK_KINDS)
        .values_list("port_id", "device_id", "kind", "own", "port__peer_id")
    )
    kinds: dict[int, set[str]] = {}
    on_devices: dict[int, set[str]] = {}
    for port_id, device_id, kind, is_own, peer_id in rows:
        if kind in BOTH_ENDS and peer_id is not None:
            kinds.setdefault(peer_id, set()).add(kind)
        if not is_own:
            continue
        if port_id is None:
            on_devices.setdefault(device_id, set()).add(kind)
        else:
            kinds.setdefault(port_id, set()).add(kind)
    if on_devices:
        for port_id, device_id in Port.objects.filter(device_id__in=on_devices).values_list("pk", "device_id"):
            kinds.setdefault(port_id, set()).update(on_devices[device_id])
    return {port_id: frozenset(k) for port_id, k in kinds.items()}


def _glob_matcher(glob: str | None):
    return re.compile(fnmatch.translate(glob)).match if glob else None


def fabric_view(filters: dict, with_cells: bool = True) -> tuple[Counts, list[Cell]]:
    """The counts and the grid of the hosts' and adapters' ports matching `filters` (PortFilter's cleaned data); open
    events are counted whatever they are on (a switch's too: they are in the problem list).

    One pass over every port (one query, no per-row dates): at 20,000 ports a query per
    count and a filtered query for the grid cost more in SQL compilation than the rows themselves.
    """
    nodes, stale_names, by_severity = host_totals()
    problems = problem_kinds()
    rows = host_port_rows(grid_ports())
    tally, cells = health_and_cells(rows, filters, problems, stale_names, with_cells)
    return make_counts(nodes, by_severity, tally), cells


# A grid row: the port's id, node, device, number, status, then what the filters compare (health_and_cells).
ROW_FIELDS = ("pk", "device__node__name", "device__name", "number", "status", "speed", "lanes")
ROW_FIELDS += ("device__hca_type", "link_layer", "device__node__kind")


def grid_ports():
    """The ports of the overview's nodes (GRID_KINDS)."""
    return Port.objects.filter(device__node__kind__in=GRID_KINDS)


def host_port_rows(ports, *more: str):
    """`ports`' grid rows (ROW_FIELDS, then `more`), unsorted."""
    # Sorted by the caller: PostgreSQL's collation-aware sort of 20,000 names cost more than the query.
    return portfacts.annotate(ports).order_by().values_list(*ROW_FIELDS, *more)


def host_totals() -> tuple[dict, set[str], dict[str, int]]:
    """The hosts (total, stale, latest ingest) and adapters (total), the stale hosts' names, the open events per
    severity."""
    host = Q(kind=Node.Kind.HOST)
    stale = portfacts.node_stale_q(prefix="") & host
    nodes = Node.objects.filter(kind__in=GRID_KINDS).aggregate(
        total=Count("id", filter=host),
        stale=Count("id", filter=stale),
        latest=Max("last_ingested_at", filter=host),
        adapters=Count("id", filter=Q(kind=Node.Kind.ADAPTER)),
    )
    hosts = Node.objects.filter(host)
    stale_names = set(hosts.filter(stale).values_list("name", flat=True)) if nodes["stale"] else set()
    by_severity = dict(
        Event.objects.filter(resolved_at__isnull=True).values_list("severity").annotate(n=Count("id")).order_by()
    )
    return nodes, stale_names, by_severity


def make_counts(nodes: dict, by_severity: dict[str, int], tally: dict[str, int]) -> Counts:
    return Counts(
        nodes=nodes["total"],
        stale_nodes=nodes["stale"],
        ports=sum(tally.values()),
        by_health=tally,
        open_events={s: by_severity.get(s, 0) for s in Event.Severity.values},
        last_ingest=nodes["latest"],
        adapters=nodes["adapters"],
    )


def health_and_cells(
    rows, filters: dict, problems: dict[int, frozenset[str]], stale_names: set[str], with_cells: bool
) -> tuple[dict[str, int], list[Cell]]:
    """How many ports of each health, and the cells of those matching `filters`, in node,
    device, port order. The plain overview (no filter) keeps every port: no test per row."""
    node_match, device_match = _glob_matcher(filters.get("node")), _glob_matcher(filters.get("device"))
    equal = [
        (index, filters[key])
        for index, key in ((5, "speed"), (6, "width"), (7, "hca"), (8, "layer"))
        if filters.get(key) not in (None, "")
    ]
    wanted_state, only_problems = filters.get("state"), filters.get("problems")
    filtering = bool(wanted_state or only_problems or node_match or device_match or equal)
    tally = dict.fromkeys(HEALTHS, 0)
    cells: list[Cell] = []
    append, new_cell = cells.append, Cell._make
    for row in sorted(rows, key=itemgetter(1, 2, 3)):  # node, device, port; code-point order on every database
        kinds = problems.get(row[0])
        health = port_health(row[4], kinds) if kinds else row[4]  # most ports: no open problem, their status
        tally[health] += 1
        if not with_cells or (
            filtering
            and (
                (wanted_state and health != wanted_state)
                or (only_problems and health in QUIET)
                or (node_match and not node_match(row[1]))
                or (device_match and not device_match(row[2]))
                or (equal and any(row[index] != value for index, value in equal))
            )
        ):
            continue
        why = kind_words(kinds) if kinds and health not in QUIET else ""
        append(new_cell((row[1], row[2], row[3], health, row[1] in stale_names, why, row[9] == ADAPTER)))
    return tally, cells


def counts() -> Counts:
    return fabric_view({}, with_cells=False)[0]


def open_problems(filters: dict, advice: bool = False):
    """Open events, most severe first, then oldest first (the longest-standing problem leads), or with
    filters["sort"] == "newest" newest first: the problems (critical and warning), or with `advice` the
    advice (info: a capped counter, a PCIe link that could be faster), which is listed apart."""
    rows = Event.objects.filter(resolved_at__isnull=True)
    rows = rows.select_related("node", "device", "port__peer__device__node", "acknowledgement")
    rows = rows.filter(severity=ADVICE) if advice else rows.exclude(severity=ADVICE)
    if filters.get("node"):
        rows = rows.filter(**glob_filter("node__name", filters["node"]))
    if filters.get("device"):
        rows = rows.filter(**glob_filter("device__name", filters["device"]))
    if filters.get("sort") == "newest":
        return rows.order_by("-opened_at", "-id")
    return rows.annotate(severity_order=SEVERITY_ORDER).order_by("severity_order", "opened_at", "id")


def mark_silenced(events, now: datetime) -> None:
    """Set `event.silence` (the Silence in force that covers it, or None) on each of `events`."""
    silences = list(Silence.objects.active(now))
    for event in events:
        event.silence = silencing(event, silences) if event.is_open else None


def acknowledgement(event: Event):
    try:
        return event.acknowledgement
    except Event.acknowledgement.RelatedObjectDoesNotExist:
        return None
