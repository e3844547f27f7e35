"""`/search/?q=`: the search box's answer: the nodes, ports, GUIDs and switches a query names
(fabricweb.dashboard.finder); a query naming exactly one thing goes straight to its page."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from .. import finder


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=finder.QUERY_MAX, strip=True)


@login_required
def search(request):
    form = SearchForm(request.GET)
    context = {"form": form, "search_q": request.GET.get("q", "")[: finder.QUERY_MAX], "hits": [], "more": False}
    if not form.is_valid():
        return render(request, "dashboard/search.html", context, status=400)
    query = form.cleaned_data["q"]
    hits, more = finder.find(query)
    if len(hits) == 1 and hits[0].exact:
        return redirect(hits[0].url)
    context.update(query=query, hits=hits, more=more, limit=finder.RESULTS)
    return render(request, "dashboard/search.html", context)
