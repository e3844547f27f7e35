"""Operator actions: POST only, CSRF-checked by the middleware, 403 for anyone without health.operate."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from fabricweb.health.actions import BaselineError, NormHoldError, accept_baseline, accept_norm
from fabricweb.health.models import Acknowledgement, Event, Silence
from fabricweb.inventory.models import Node

from ..forms import AcknowledgeForm, SilenceForm
from .common import require_operator
from .port import find_port


def _back(request, fallback: str):
    """Where the form came from, if it is a page of this site; else `fallback`."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


def _form_errors(request, form) -> None:
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{form.fields[field].label or field}: "
        messages.error(request, label + " ".join(errors))


@login_required
@require_POST
def acknowledge(request, pk: int):
    require_operator(request)
    event = Event.objects.filter(pk=pk).first()
    if event is None:
        raise Http404(f"no event {pk}")
    form = AcknowledgeForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
    elif not event.is_open:
        messages.error(request, "This event is resolved: there is nothing to acknowledge.")
    else:
        Acknowledgement.objects.update_or_create(
            event=event,
            defaults={
                "by": request.user,
                "by_name": request.user.get_username(),
                "note": form.cleaned_data["note"],
                "at": timezone.now(),
            },
        )
        messages.success(request, f"Acknowledged: {event.message}")
    return _back(request, "dashboard:events")


@login_required
@require_POST
def silence(request):
    require_operator(request)
    form = SilenceForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
    else:
        made = form.silence(request.user, timezone.now())
        messages.success(request, f"Silenced {made}.")
    return _back(request, "dashboard:events")


@login_required
@require_POST
def lift_silence(request, pk: int):
    require_operator(request)
    row = Silence.objects.filter(pk=pk, lifted_at__isnull=True).first()
    if row is None:
        raise Http404(f"no silence {pk} in force")
    row.lifted_at, row.lifted_by_name = timezone.now(), request.user.get_username()
    row.save(update_fields=["lifted_at", "lifted_by_name"])
    messages.success(request, f"Lifted the silence {row}.")
    return _back(request, "dashboard:events")


@login_required
@require_POST
def baseline(request, node: str, device: str, port: int):
    require_operator(request)
    row = find_port(node, device, port)
    try:
        done = accept_baseline(row)
    except BaselineError as e:
        messages.error(request, str(e))
    else:
        names = ", ".join(p.name for p in done.policies)
        messages.success(
            request, f"Accepted the current link as baseline ({names}); its event resolves after a few clean polls."
        )
    return redirect("dashboard:port", node=node, device=device, port=port)


@login_required
@require_POST
def accept_node_norm(request, name: str):
    require_operator(request)
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise Http404(f"no node {name!r}")
    try:
        accept_norm(node, by=request.user.get_username())
    except NormHoldError as e:
        messages.error(request, str(e))
    else:
        messages.success(
            request, f"Accepted what {name} reports as normal: it votes in the fabric norm again, once per HCA model."
        )
    return redirect("dashboard:node", name=name)
