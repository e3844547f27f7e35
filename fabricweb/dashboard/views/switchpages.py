"""`/fabric/`: switches and their ports, the switch-to-switch links, the fabric's problems, the sweeps and the
topology's changes; `/switches/<name or GUID>/`: one switch, in ibstat and iblinkinfo words."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from collectors.link import SPEED_RANK
from fabricweb.fabric import congested
from fabricweb.fabric.naming import find_switch
from fabricweb.health.models import Event
from fabricweb.health.records.freshness import is_old
from fabricweb.inventory import portfacts, readings
from fabricweb.inventory.models import Node, Port

from .. import grid, linkends, porthealth, problemrows, switches
from ..oneview import one_view
from .common import freshness, mark_page

LINKS_PER_PAGE = 100
PROBLEMS_PER_PAGE = 50
RECENT_EVENTS = 20


class FabricPages(forms.Form):
    links = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    problems = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    advice = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    healthy = forms.BooleanField(required=False)  # list the healthy (up) inter-switch links too


@login_required
def fabric_page(request):
    now = timezone.now()
    form = FabricPages(request.GET)
    status = 200
    if not form.is_valid():
        status, pages = 400, {}
    else:
        pages = form.cleaned_data
    # Its counts, grid, links, problems and changes from one view of the database, as the overview's (oneview.py):
    # a sweep committed between two of them would make them disagree for a refresh.
    with one_view():
        context = _fabric_context(form, pages, now)
    return render(request, "dashboard/fabric.html", context, status=status)


def _fabric_context(form: FabricPages, pages: dict, now) -> dict:
    counts = switches.link_counts(now)
    blocks, tally = switches.switch_grid()
    # Problem links only unless asked: 100 healthy rows hid the few that matter.
    show_healthy = bool(pages.get("healthy"))
    links = switches.inter_switch_links()
    links_page = Paginator(links if show_healthy else links.exclude(state="up"), LINKS_PER_PAGE).get_page(
        pages.get("links")
    )
    problems = Paginator(switches.fabric_problems(), PROBLEMS_PER_PAGE).get_page(pages.get("problems"))
    mark_page(problems, now)
    advice = Paginator(switches.fabric_problems(advice=True), PROBLEMS_PER_PAGE).get_page(pages.get("advice"))
    mark_page(advice, now)
    last = counts.last_sweep
    return {
        "form": form,
        "counts": counts,
        "tally": tally,
        "ports": sum(tally.values()),
        "grid": grid.render_switches(blocks),
        "links": links_page,
        "link_rows": [_link_row(link) for link in links_page],
        "show_healthy": show_healthy,
        "problems": problems,
        "advice": advice,
        "collectors": switches.collectors(),
        "changes": switches.recent_changes(),
        # The ports that lost most of their link's time to congestion in their last poll.
        "congested": congested.top(),
        "expected": switches.expected_cabling(),
        **freshness(now, last.stored_at if last else None, known=True),
    }


def _below(speed, lanes, capable_speed, capable_lanes) -> bool:
    """Trained below what both ends support, in speed or in width."""
    slower = speed in SPEED_RANK and capable_speed in SPEED_RANK and SPEED_RANK[speed] < SPEED_RANK[capable_speed]
    return slower or (lanes is not None and capable_lanes is not None and lanes < capable_lanes)


def _link_row(link) -> dict:
    return {
        "link": link,
        # What the last sweep that saw it up saw; the link's own while it is up (portfacts.link_is_up), the
        # last one while down (no link now) or unknown.
        "trained": portfacts.named_link(link.speed, link.lanes),
        "live": bool(portfacts.link_is_up(link.state)),
        "capable": portfacts.named_link(link.capable_speed, link.capable_lanes),
        "below": _below(link.speed, link.lanes, link.capable_speed, link.capable_lanes),
    }


@login_required
def switch_page(request, key: str):
    switch = find_switch(key)
    if switch is None:
        other = Node.objects.filter(name=key).exclude(kind=Node.Kind.SWITCH).first()
        if other is not None:
            return redirect("dashboard:node", name=other.name)
        raise Http404(f"no switch {key!r}")
    now = timezone.now()
    fn = switch.fabric_node if hasattr(switch, "fabric_node") else None
    reachable = fn is not None and fn.missing_since is None
    ports = Port.objects.filter(device__node=switch).select_related("device__node", "peer__device__node")
    ports = list(portfacts.annotate(ports).order_by("number"))
    readings.attach(ports)
    problems = porthealth.problem_kinds(node=switch)
    far_problems = linkends.far_end_problems(p.peer_id for p in ports)
    rows = []
    for p in ports:
        peer, far = p.peer, far_problems.get(p.peer_id, [])
        rows.append(
            {
                "port": p,
                "health": linkends.worse(porthealth.port_health(p.status, problems.get(p.pk, ())), far),
                "far_problems": [(linkends.LINK_HEALTH[e.kind], problemrows.what(e.kind), e) for e in far],
                "state": IBSTAT_STATES.get(p.state_id, p.state_name),
                "phys_state": PHYS_STATES.get(p.phys_state_id, p.phys_state_name),
                "link": portfacts.link(p),
                "capable": portfacts.named_link(p.capable_speed, p.capable_lanes, None, p.link_layer),
                "below": p.up and _below(p.speed, p.lanes, p.capable_speed, p.capable_lanes),
                "expected": portfacts.expected_link(p),
                "peer": peer,
                "peer_is_switch": peer is not None and peer.device.node.kind == Node.Kind.SWITCH,
                "errors": switches.errors_last_hour(p),
            }
        )
    tally = dict.fromkeys(switches.HEALTHS, 0)
    for r in rows:
        tally[r["health"]] += 1
    # Its own events, and the link events that name its ports (judged on the far end: linkends.py).
    peers = [p.peer_id for p in ports if p.peer_id is not None]
    events = list(
        Event.objects.filter(Q(node=switch) | Q(port__peer__device__node=switch) | Q(port_id__in=peers))
        .select_related("node", "device", "port__peer__device__node", "acknowledgement")
        .order_by("-opened_at", "-id")[:RECENT_EVENTS]
    )
    mark_page(events, now)
    context = {
        "switch": switch,
        "fn": fn,
        "reachable": reachable,
        "stale": is_old(switch.last_ingested_at, now),
        "rows": rows,
        "tally": tally,
        "events": events,
        **freshness(now),
    }
    return render(request, "dashboard/switch.html", context)
