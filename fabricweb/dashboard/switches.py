"""What /fabric/, the switch pages and the overview's fabric line read: switches, their ports, links, sweeps.

Each in a fixed number of queries whatever the size of the fabric. A switch port's health is a host
port's (porthealth.port_health over its portfacts status: not connected, no link and none expected; unknown,
every port of a switch the sweeps no longer reach, what it last said is not its state now). A link's
state is portfacts' too (portfacts.link_states).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import NamedTuple

from django.db.models import Count, OuterRef, Q, Subquery

from collectors.facts import ERROR_COUNTERS
from fabricweb.fabric.models import ExpectedLink, Link, Sweep, TopologyChange
from fabricweb.health.models import Event
from fabricweb.health.records.freshness import is_old
from fabricweb.health.rules.findings import Kind
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Node, Port

from . import linkends, porthealth

SWITCH, COLLECTOR = Node.Kind.SWITCH, Node.Kind.COLLECTOR
HEALTHS = porthealth.HEALTHS
RECENT_CHANGES = 50


class SwitchCell(NamedTuple):
    number: int
    health: str
    far_end: str  # untrusted text: escaped where rendered


class SwitchBlock(NamedTuple):
    name: str
    reachable: bool
    cells: list[SwitchCell]
    tally: dict[str, int]


@dataclass
class LinkCounts:
    switches: int
    unreachable: int
    links: int  # cables the last sweeps see (every kind)
    inter_switch: int  # switch-to-switch links still cabled (seen, or facing each other)
    isl: dict[str, int]  # inter-switch links by state
    last_sweep: Sweep | None
    sweep_age_s: int | None
    sweep_stale: bool

    @property
    def any(self) -> bool:
        return bool(self.switches or self.links or self.last_sweep)


def link_counts(now: datetime) -> LinkCounts:
    """Switches, links and the last applied sweep: three queries (the overview's fabric line, /fabric/'s head)."""
    switches = Node.objects.filter(kind=SWITCH).aggregate(
        total=Count("id"), unreachable=Count("id", filter=Q(fabric_node__missing_since__isnull=False))
    )
    isl = Q(inter_switch=True)
    tallies = portfacts.link_states(Link.objects.all()).aggregate(
        live=Count("id", filter=Q(gone_at__isnull=True)),
        **{state: Count("id", filter=isl & Q(state=state)) for state in portfacts.LINK_STATES},
    )
    last = Sweep.objects.filter(applied=True).select_related("collector").order_by("-stored_at", "-id").first()
    by_state = {s: tallies[s] for s in portfacts.LINK_STATES if s != "gone"}
    return LinkCounts(
        switches=switches["total"],
        unreachable=switches["unreachable"],
        links=tallies["live"],
        inter_switch=sum(by_state.values()),
        isl=by_state,
        last_sweep=last,
        sweep_age_s=None if last is None else int((now - last.stored_at).total_seconds()),
        sweep_stale=last is not None and is_old(last.stored_at, now),
    )


def switch_grid() -> tuple[list[SwitchBlock], dict[str, int]]:
    """Every switch with a cell per port, in name and port order, and the ports' tally by health."""
    switches = sorted(
        Node.objects.filter(kind=SWITCH).values_list("pk", "name", "fabric_node__missing_since"), key=itemgetter(1)
    )
    problems = porthealth.problem_kinds(node__kind=SWITCH)
    rows = list(
        portfacts.annotate(Port.objects.filter(device__node__kind=SWITCH))
        .order_by()  # sorted below, in code-point order on every database
        .values_list("pk", "device__node_id", "number", "status", "peer_label", "peer_id")
    )
    far_problems = linkends.far_end_kinds(row[5] for row in rows)  # a link's problem marks both ends
    by_switch: dict[int, list] = {}
    for row in rows:
        by_switch.setdefault(row[1], []).append(row)
    total = dict.fromkeys(HEALTHS, 0)
    blocks = []
    for pk, name, missing_since in switches:
        reachable = missing_since is None
        tally = dict.fromkeys(HEALTHS, 0)
        cells = []
        for port_pk, _, number, status, peer, peer_id in sorted(by_switch.get(pk, ()), key=itemgetter(2)):
            own = porthealth.port_health(status, problems.get(port_pk, ()))
            health = linkends.worse(own, far_problems.get(peer_id, ()))
            tally[health] += 1
            cells.append(SwitchCell(number, health, peer))
        for k, v in tally.items():
            total[k] += v
        blocks.append(SwitchBlock(name, reachable, cells, tally))
    return blocks, total


def inter_switch_links():
    """Switch-to-switch links still cabled, worst first, then by the first end's switch and port."""
    rows = portfacts.link_states(
        Link.objects.filter(inter_switch=True).select_related("a__device__node", "b__device__node")
    ).exclude(state="gone")
    return rows.order_by("state_rank", "a__device__node__name", "a_port", "id")


def fabric_problems(advice: bool = False):
    """Open events on switches, collectors and links (a port with a far end), most severe first, then oldest:
    the problems, or with `advice` the advice (severity info), listed apart."""
    on_fabric = Q(node__kind__in=[SWITCH, COLLECTOR]) | Q(port__peer_label__gt="")
    rows = Event.objects.filter(on_fabric, resolved_at__isnull=True)
    rows = rows.filter(severity=porthealth.ADVICE) if advice else rows.exclude(severity=porthealth.ADVICE)
    rows = rows.select_related("node", "device", "port__peer__device__node", "acknowledgement")
    return rows.annotate(severity_order=porthealth.SEVERITY_ORDER).order_by("severity_order", "opened_at", "id")


def collectors() -> list[dict]:
    """Every fabric collector with its last sweep (leading, or standby and why), in two queries."""
    latest = Sweep.objects.filter(collector=OuterRef("pk")).order_by("-stored_at", "-id").values("pk")[:1]
    nodes = list(Node.objects.filter(kind=COLLECTOR).annotate(last_sweep=Subquery(latest)).order_by("name"))
    sweeps = Sweep.objects.in_bulk([n.last_sweep for n in nodes if n.last_sweep is not None])
    out = []
    for node in nodes:
        sweep = sweeps.get(node.last_sweep)
        out.append({"node": node, "sweep": sweep, "stale": portfacts.node_is_stale(node)})
    return out


def recent_changes() -> list[TopologyChange]:
    return list(TopologyChange.objects.order_by("-at", "-id")[:RECENT_CHANGES])


def expected_cabling() -> dict | None:
    """How many links the imported expected cabling has, and its open problems; None when none was imported."""
    expected = ExpectedLink.objects.count()
    if not expected:
        return None
    problems = Event.objects.filter(kind=Kind.CABLING, resolved_at__isnull=True).count()
    return {"links": expected, "problems": problems}


# Counters of the `recent` ring that count errors (port_xmit_wait counts congestion ticks).
_ERRORS = tuple(ERROR_COUNTERS)


def errors_last_hour(port: Port) -> tuple[list[tuple[str, int]], float] | None:
    """The error counters that moved over the port's last hour of polls (its `recent` ring), with the
    seconds that covers; None when the port has no history yet. Counts, never extrapolated."""
    ring = port.recent
    if not ring:
        return None
    totals: dict[str, int] = {}
    span = 0.0
    for _ts, interval, deltas in ring:
        span += interval or 0.0
        for name, value in deltas.items():
            if name in _ERRORS and isinstance(value, int) and value > 0:
                totals[name] = totals.get(name, 0) + value
    return sorted(totals.items()), min(span, 3600.0)
