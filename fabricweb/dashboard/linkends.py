"""A link's problem marks both of its ends: a switch port cabled to a flapping host port, or to one with symbol
errors, reads as the link does, not "up, 0 errors".

The health engine judges a link's own state on one end (a host port, or the first of two switch ports by
name), so the other end has no event of its own. Here the far end's open problems (not advice) that are the
link's, not the host's (its state, its errors; not a PCIe slot or a stale node), mark this end as well.
"""

from __future__ import annotations

from fabricweb.health.models import Event
from fabricweb.health.rules.findings import Kind

from . import porthealth
from .marks import ERRORING, FLAPPING, HEALTHS, PCIE_LIMITED

ADVICE = Event.Severity.INFO.value
# A far end's problem kind -> the health it gives this end of the cable.
# porthealth.BOTH_ENDS: the link's errors (not one end's transmit discards or congestion, which are that port's).
LINK_HEALTH = {
    Kind.DOWN.value: "down",
    Kind.DEGRADED.value: "degraded",
    **{kind: ERRORING for kind in porthealth.BOTH_ENDS},
    Kind.FLAPPING.value: FLAPPING,
}
RANK = {h: i for i, h in enumerate(HEALTHS)}


def _open_link_problems():
    return Event.objects.filter(resolved_at__isnull=True, port__isnull=False, kind__in=list(LINK_HEALTH)).exclude(
        severity=ADVICE
    )


def far_end_problems(peer_ids) -> dict[int, list[Event]]:
    """Far port id -> its open link problems (one query), most severe first: for a page of a few ports."""
    ids = {pk for pk in peer_ids if pk is not None}
    if not ids:
        return {}
    rows = (
        _open_link_problems()
        .filter(port_id__in=ids)
        .select_related("node", "device", "port")
        .order_by("severity", "opened_at", "id")
    )
    found: dict[int, list[Event]] = {}
    for event in rows:
        found.setdefault(event.port_id, []).append(event)
    return found


def far_end_kinds(peer_ids) -> dict[int, list[str]]:
    """Far port id -> the kinds of its open link problems (one query), for the whole fabric's grid.

    Every open link problem's port and kind is read and matched here: they are few, and naming every far end
    in the query (64,000 at 100,000 ports) cost ~3.7 s of the fabric page (bench/bench_dashboard.py --switches)."""
    ids = {pk for pk in peer_ids if pk is not None}
    found: dict[int, list[str]] = {}
    if ids:
        for port_id, kind in _open_link_problems().order_by().values_list("port_id", "kind"):
            if port_id in ids:
                found.setdefault(port_id, []).append(kind)
    return found


def worse(health: str, far: list) -> str:
    """`health` of this end, or the worse one the far end's problems (events or kinds) give it. A flapping far
    end makes this end flapping, down at this poll or up (one mark for the episode, as porthealth.port_health);
    an unknown end (an unreached switch's) stays unknown: what it last said is not its state now."""
    if health == "unknown" or not far:
        return health
    kinds = {getattr(problem, "kind", problem) for problem in far}
    if FLAPPING in kinds:
        return FLAPPING if health in porthealth.FLAPPABLE or health in (ERRORING, PCIE_LIMITED) else health
    for kind in kinds:
        marked = LINK_HEALTH[kind]
        if RANK[marked] < RANK[health]:
            health = marked
    return health
