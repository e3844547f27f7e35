"""`/wall/`: problems and counts, large and dark, for NOC screens; a logged-in user or a wall link token.

Links are read-only: the page shows what the overview shows of problems and nothing
more, and a link is revoked by an operator on /wall/links/ (or in the admin).
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from .. import fabric
from ..forms import WallLinkForm
from ..models import WallLink
from .common import freshness, mark_page, require_operator

WALL_PROBLEMS = 30
LAST_USED_EVERY = timedelta(minutes=1)


def wall(request):
    token = request.GET.get("token")
    if token is not None:
        link = WallLink.find(token)
        if link is None:
            return render(request, "dashboard/wall_refused.html", status=403)
        now = timezone.now()
        if link.last_used_at is None or now - link.last_used_at >= LAST_USED_EVERY:
            WallLink.objects.filter(pk=link.pk).update(last_used_at=now)
    elif not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    now = timezone.now()
    counts = fabric.counts()
    problems = list(fabric.open_problems({})[:WALL_PROBLEMS])
    mark_page(problems, now)
    context = {"counts": counts, "problems": problems, **freshness(now, counts.last_ingest, known=True)}
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
