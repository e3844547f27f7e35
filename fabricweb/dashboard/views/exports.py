"""`/ports.csv`: the hosts' and agentless CAs' ports the overview's filters select (the same PortFilter, the
same health as its grid), one row each, in the pages' words (ibstat's; a RoCE port's link and speed in
Ethernet's, the far end of its cable as the sweeps name it; who reads it: the node's agent, or for a channel
adapter no agent reports the fabric collector), for a spreadsheet (fabricweb.dashboard.csvexport)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.utils import timezone

from collectors.facts import IBSTAT_STATES, PHYS_STATES, guid_words
from collectors.hcamodels import model_words
from fabricweb.inventory import portfacts

from .. import csvexport, porthealth
from ..forms import PortFilter
from ..marks import HEALTH_WORDS

HEADER = [
    "node", "device", "port", "health", "state", "physical state", "link", "rate (Gb/s)", "width (lanes)",
    "speed", "expected link", "far end", "LID", "SM LID", "port GUID", "link layer", "HCA model", "node stale",
    "read by",
]  # fmt: skip


@login_required
def ports_csv(request):
    form = PortFilter(request.GET)
    if not form.is_valid():
        wrong = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return HttpResponse(f"The filter was not applied: {wrong}\n", status=400, content_type="text/plain")
    _counts, cells = porthealth.fabric_view(form.cleaned_data)
    now = timezone.now()
    return csvexport.response(f"ports-{now:%Y%m%d-%H%M}.csv", HEADER, _rows(cells))


def _rows(cells):
    ports = portfacts.annotate(porthealth.grid_ports()).select_related("device__node")
    by_name = {(p.device.node.name, p.device.name, p.number): p for p in ports.order_by()}
    for c in cells:
        p = by_name.get((c.node, c.device, c.port))
        if p is None:  # gone since the grid's query
            continue
        link, expected = portfacts.link(p), portfacts.expected_link(p)
        yield [
            c.node, c.device, c.port, HEALTH_WORDS[c.health],
            IBSTAT_STATES.get(p.state_id, p.state_name), PHYS_STATES.get(p.phys_state_id, p.phys_state_name),
            link.name if link else "no link", link.gbps if link else None, link.lanes if link else None,
            link.speed_words if link else None, expected.name if expected else None, p.peer_label or None,
            p.lid, p.sm_lid, guid_words(p.port_guid),
            p.link_layer, model_words(p.device.hca_type), c.stale,
            "fabric collector" if c.adapter else "node agent",
        ]  # fmt: skip
