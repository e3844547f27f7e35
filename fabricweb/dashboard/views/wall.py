"""`/wall/`: counts, problems and a heat map of the whole fabric, large and dark, for NOC screens; a logged-in
user or a wall link token.

Links are read-only: the page shows what the overview shows of problems and nothing
more, and a link is revoked by an operator on /wall/links/ (or in the admin).
"""

from __future__ import annotations

from datetime import timedelta
from itertools import groupby
from operator import attrgetter
from typing import NamedTuple

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from fabricweb.tokens import hash_token

from .. import newness, porthealth, switches
from ..forms import WallLinkForm
from ..marks import HEALTH_WORDS, HEALTHS, MARKS, QUIET
from ..models import WallLink
from .common import freshness, mark_page, require_operator

# Rows sent to the wall: more than a 3840x2160 screen holds (~50); wall.js hides those past the screen's
# end and says how many it does not show, these and the rest ("+N more").
WALL_PROBLEMS = 100
LAST_USED_EVERY = timedelta(minutes=1)
# Past this many tiles the heat map drops the names: colour and mark still read from across the room.
NAMED_TILES = 400
RANK = {h: i for i, h in enumerate(HEALTHS)}


class Tile(NamedTuple):
    """One host, agentless channel adapter or switch on the wall's heat map: its worst port and how many of its
    ports are problems."""

    name: str
    health: str
    mark: str
    problems: int
    switch: bool
    adapter: bool = False  # read by the fabric collector, no agent


def _tile(name: str, healths: list[str], switch: bool, reachable: bool = True, adapter: bool = False) -> Tile:
    worst = min(healths, key=RANK.__getitem__) if healths else "not_connected"
    if not reachable:
        worst = "unknown"
    return Tile(name, worst, MARKS[worst], sum(h not in QUIET for h in healths), switch, adapter)


def heat_map(cells) -> list[Tile]:
    """Every host and agentless adapter (from the overview's cells) then every switch, one tile each."""
    tiles = []
    for node, group in groupby(cells, key=attrgetter("node")):
        group = list(group)
        tiles.append(_tile(node, [c.health for c in group], False, adapter=group[0].adapter))
    blocks, _ = switches.switch_grid()
    tiles += [_tile(b.name, [c.health for c in b.cells], True, b.reachable) for b in blocks]
    return tiles


# Every health the overview shows, in its colour and mark: what a tile's worst port reads as.
LEGEND_WORDS = {**HEALTH_WORDS, "up": "all up", "unknown": "stale or unreachable"}
LEGEND = [(h, MARKS[h], LEGEND_WORDS[h]) for h in HEALTHS]


def refused(request, token: str):
    """A revoked link says so (and when); anything else is not a wall link. The reason also travels in a
    header, for the wall's live refresh (live.js) to show instead of "logged out"."""
    revoked = WallLink.objects.filter(token_hash=hash_token(token), revoked_at__isnull=False)
    link = revoked.first() if len(token) <= 100 else None
    response = render(request, "dashboard/wall_refused.html", {"link": link}, status=403)
    if link is not None:
        response["X-Fabric-Refused"] = f"this wall link was revoked on {link.revoked_at:%Y-%m-%d %H:%M} UTC"
    else:
        response["X-Fabric-Refused"] = "this is not a wall link (mistyped or cut short)"
    return response


def wall(request):
    token = request.GET.get("token")
    if token is not None:
        link = WallLink.find(token)
        if link is None:
            return refused(request, token)
        now = timezone.now()
        if link.last_used_at is None or now - link.last_used_at >= LAST_USED_EVERY:
            WallLink.objects.filter(pk=link.pk).update(last_used_at=now)
    elif not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    now = timezone.now()
    counts, cells = porthealth.fabric_view({})
    every = list(porthealth.open_problems({}))
    problems = newness.wall_order(every, now)[:WALL_PROBLEMS]
    mark_page(problems, now)
    tiles = heat_map(cells)
    context = {
        "counts": counts,
        "problems": problems,
        "open_problems": len(every),
        "not_sent": len(every) - len(problems),
        "new_problems": sum(e.is_new for e in problems),
        "tiles": tiles,
        "legend": LEGEND,
        "dense": len(tiles) > NAMED_TILES,
        **freshness(now, counts.last_ingest, known=True),
    }
    response = render(request, "dashboard/wall.html", context)
    response["Referrer-Policy"] = "no-referrer"  # the token is in the URL
    return response


@login_required
def wall_links(request):
    require_operator(request)
    new_link = None
    if request.method == "POST":
        form = WallLinkForm(request.POST)
        if form.is_valid():
            _, token = WallLink.issue(form.cleaned_data["name"], request.user.get_username())
            # Shown in this response only: not through messages, which may travel in a cookie.
            new_link = request.build_absolute_uri(f"/wall/?token={token}")
            form = WallLinkForm()
    else:
        form = WallLinkForm()
    context = {"form": form, "links": WallLink.objects.all(), "new_link": new_link, **freshness(timezone.now())}
    response = render(request, "dashboard/wall_links.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_wall_link(request, pk: int):
    require_operator(request)
    link = WallLink.objects.filter(pk=pk, revoked_at__isnull=True).first()
    if link is None:
        raise Http404(f"no live wall link {pk}")
    link.revoked_at = timezone.now()
    link.save(update_fields=["revoked_at"])
    messages.success(request, f"Revoked the wall link {link.name!r}.")
    return redirect("dashboard:wall_links")
