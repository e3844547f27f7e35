"""`/nodes/<name>/`: devices (each with its PCIe path), an ibstat-like port table, the GPUs in nvidia-smi topo
words, read errors, recent events, last seen."""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone

from collectors.facts import IBSTAT_STATES, PHYS_STATES
from collectors.hcamodels import model_words
from fabricweb.health.models import Event
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Node, Port
from fabricweb.jobs.models import Drain, DrainAction
from fabricweb.jobs.report import node_jobs

from .. import porthealth
from ..marks import PCIE_KINDS
from .common import can_operate, freshness, mark_page

RECENT_DRAIN_ACTIONS = 10
RECENT_EVENTS = 20
READ_ERRORS_SHOWN = 100  # a snapshot may carry thousands; the API pages the rest


@login_required
def node_page(request, name: str):
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise Http404(f"no node {name!r}")
    if node.kind == Node.Kind.SWITCH:
        return redirect("dashboard:switch", key=node.name)
    now = timezone.now()
    ports = list(portfacts.annotate(Port.objects.filter(device__node=node)).order_by("device__name", "number"))
    by_device = defaultdict(list)
    for p in ports:
        by_device[p.device_id].append(p)
    problems = porthealth.problem_kinds(node=node)
    pcie_open = list(
        Event.objects.filter(node=node, kind__in=sorted(PCIE_KINDS), resolved_at__isnull=True).order_by("kind", "key")
    )
    devices = []
    for d in node.devices.order_by("name"):
        rows = []
        for p in by_device[d.pk]:
            rows.append(
                {
                    "port": p,
                    "health": porthealth.port_health(p.status, problems.get(p.pk, ())),
                    "state": IBSTAT_STATES.get(p.state_id, p.state_name),
                    "phys_state": PHYS_STATES.get(p.phys_state_id, p.phys_state_name),
                    "link": portfacts.link(p),  # None without one: a DOWN/Polling port's rate is no link
                    "expected": portfacts.expected_link(p),
                    "mtu": (p.verbs or {}).get("active_mtu") if isinstance(p.verbs, dict) else None,
                }
            )
        devices.append(
            {
                "device": d,
                "model": model_words(d.hca_type),
                "pcie": portfacts.pcie_link(d),
                "path": portfacts.pcie_path(d),
                "path_absent": portfacts.absent_reason(node, d),
                "path_findings": [e for e in pcie_open if e.device_id == d.pk],
                "ports": rows,
            }
        )
    gpus = portfacts.gpus(node)
    events = list(
        Event.objects.filter(node=node)
        .select_related("node", "device", "port__peer__device__node", "acknowledgement")
        .order_by("-opened_at", "-id")[:RECENT_EVENTS]
    )
    mark_page(events, now)
    context = {
        "node": node,
        "node_stale": portfacts.node_is_stale(node),
        "read_errors": node.read_errors[:READ_ERRORS_SHOWN],
        "more_read_errors": max(0, len(node.read_errors) - READ_ERRORS_SHOWN),
        "devices": devices,
        "gpus": gpus,
        "gpu_matrix": portfacts.gpu_matrix(gpus),
        "gpus_unknown": portfacts.NO_TREE if gpus is None else None,
        # Findings on no card (an uplink shared by several, a GPU): said beside the GPU matrix.
        "node_pcie_findings": [e for e in pcie_open if e.device_id is None],
        "events": events,
        "drain": Drain.objects.filter(node=node.name).first(),
        "drain_actions": list(DrainAction.objects.filter(node=node.name)[:RECENT_DRAIN_ACTIONS]),
        "drain_mode": settings.FABRIC_DRAIN,
        "scheduler": settings.FABRIC_JOBS,
        "node_jobs": node_jobs(node.name),
        "can_operate": can_operate(request.user),
        **freshness(now),
    }
    return render(request, "dashboard/node.html", context)
