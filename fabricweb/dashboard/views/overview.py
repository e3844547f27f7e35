"""`/`: the hosts' counts and port grid, a line about the switch fabric, the problem list, with filters."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone

from .. import overviewmodel, porthealth, switches
from ..forms import PortFilter
from .common import can_operate, freshness, mark_page

PROBLEMS_PER_PAGE = 50


@login_required
def overview(request):
    now = timezone.now()
    form = PortFilter(request.GET)
    if not form.is_valid():
        counts = overviewmodel.overview({}).counts
        context = {
            "form": form,
            "counts": counts,
            "fabric_counts": switches.link_counts(now),
            **freshness(now, counts.last_ingest, known=True),
        }
        return render(request, "dashboard/overview.html", context, status=400)
    filters = form.cleaned_data
    # Counts and grid as of the last change of the data: built once per poll, not once per request.
    model = overviewmodel.overview(filters)
    context = {
        "form": form,
        "counts": model.counts,
        "fabric_counts": switches.link_counts(now),
        **freshness(now, model.counts.last_ingest, known=True),
    }
    page = Paginator(porthealth.open_problems(filters), PROBLEMS_PER_PAGE).get_page(filters.get("page"))
    mark_page(page, now)
    advice = Paginator(porthealth.open_problems(filters, advice=True), PROBLEMS_PER_PAGE).get_page(
        filters.get("advice")
    )
    mark_page(advice, now)
    context.update(
        grid=model.grid,
        shown_ports=model.shown_ports,
        problems=page,
        advice=advice,
        can_operate=can_operate(request.user),
    )
    return render(request, "dashboard/overview.html", context)
