"""Operator actions: POST only (the baseline's confirmation page is its GET), CSRF-checked by the middleware, 403
for anyone without health.operate."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from fabricweb.health.models import Acknowledgement, Event, Silence
from fabricweb.health.records.actions import BaselineError, NormHoldError, accept_baseline, accept_norm, undo_baseline
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Node
from fabricweb.jobs import drain
from fabricweb.jobs.refresh import configured_source
from fabricweb.jobs.sources import SchedulerError

from ..forms import AcknowledgeForm, SilenceForm
from ..rowactions import RowSilenceForm
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
    elif (done := Acknowledgement.objects.filter(event=event).first()) is not None:
        messages.error(request, f"Already acknowledged by {done.by_name} at {done.at:%Y-%m-%d %H:%M} UTC.")
    else:
        Acknowledgement.objects.create(
            event=event,
            by=request.user,
            by_name=request.user.get_username(),
            note=form.cleaned_data["note"],
            at=timezone.now(),
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
def silence_event(request, pk: int):
    """ "Silence this" on a problem or event row: this event's node, device, port and kind, for 1 h, 4 h, 1 d or
    until a chosen time."""
    require_operator(request)
    event = Event.objects.select_related("node", "device", "port").filter(pk=pk).first()
    if event is None:
        raise Http404(f"no event {pk}")
    form = RowSilenceForm(request.POST)
    if not event.is_open:
        messages.error(request, "This event is resolved: there is nothing to silence.")
    elif not form.is_valid():
        _form_errors(request, form)
    else:
        made = form.silence(event, request.user, timezone.now())
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
@require_http_methods(["GET", "POST"])
def baseline(request, node: str, device: str, port: int):
    """GET: the confirmation page (what the link is, what is expected now); POST (from it): accept."""
    require_operator(request)
    row = find_port(node, device, port)
    if request.method == "GET":
        context = {"port": row, "link": portfacts.link(row), "expected": portfacts.expected_link(row)}
        return render(request, "dashboard/baseline_confirm.html", context)
    try:
        done = accept_baseline(row, by=request.user.get_username())
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
def undo_port_baseline(request, node: str, device: str, port: int):
    require_operator(request)
    row = find_port(node, device, port)
    try:
        undone = undo_baseline(row)
    except BaselineError as e:
        messages.error(request, str(e))
    else:
        messages.success(
            request,
            f"Undid the baseline accepted by {undone.accepted_by or 'someone'}: "
            "the port is judged against its earlier expectation from the next poll.",
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
        done = (
            f"Accepted {name}'s held sweep: its next sweep is applied, new switches and all."
            if node.kind == Node.Kind.COLLECTOR
            else f"Accepted what {name} reports as normal: it votes in the fabric norm again, once per HCA model."
        )
        messages.success(request, done)
    return redirect("dashboard:node", name=name)


@login_required
@require_POST
def drain_node(request, name: str):
    """Drain the node in the scheduler now, with the operator's reason (fabricweb.jobs.drain.operator_drain)."""
    require_operator(request)
    source = _scheduler(request, name)
    reason = " ".join(request.POST.get("reason", "").split())[:150]
    if source is not None:
        if not reason:
            messages.error(request, "Say why: a drain needs a reason.")
        else:
            try:
                drain.operator_drain(source, name, request.user.get_username(), reason)
                messages.success(request, f"{name} drained in {source.name}: {reason}")
            except SchedulerError as e:
                messages.error(request, f"{name} was not drained: {e}")
    return redirect("dashboard:node", name=name)


@login_required
@require_POST
def undo_drain(request, name: str):
    """Resume a node fabricweb drained (never one an operator drained in the scheduler itself)."""
    require_operator(request)
    source = _scheduler(request, name)
    if source is not None:
        try:
            drain.operator_undo(source, name, request.user.get_username())
            messages.success(request, f"{name}: fabricweb's drain undone")
        except SchedulerError as e:
            messages.error(request, f"{name}: not undone: {e}")
    return redirect("dashboard:node", name=name)


def _scheduler(request, name: str):
    if not Node.objects.filter(name=name, kind=Node.Kind.HOST).exists():
        raise Http404(f"no host {name!r}")
    source = configured_source()
    if source is None:
        messages.error(request, "No scheduler is configured (FABRIC_JOBS is off).")
    return source
