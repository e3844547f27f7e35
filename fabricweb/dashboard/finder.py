"""What the search box finds: a node or switch by name, a port by its label (`cn042 mlx5_0/1`,
`cn042/mlx5_0/1`, `leaf01 port 5`) or its LID (`lid 17`, or the number alone, as ibstat's `Base lid`), an HCA
by its name (`cn042 mlx5_0`) or its model (`MT4123`, or its name `ConnectX-6`: every HCA of that model), a port,
HCA or switch by its GUID (0x and 16 hex digits, with or without 0x, any case, or sysfs' `0c42:a103:00a1:b2c1`).

Bounded at every size: a port is only ever looked up through an index (its GUID; its node, then device
and number) or one equality test on the port table (its LID); a name is matched, case-insensitively, in the
node table only (a node per 4 ports or so); an HCA by its node GUID or its model is one equality test on the
device table. At most RESULTS hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from django.db.models import Q
from django.urls import reverse

from collectors.facts import IBSTAT_STATES, NODE_NAME_PATTERN, guid_words, parse_guid
from collectors.hcamodels import hca_types, model_words
from fabricweb.inventory.models import Device, Node, Port

RESULTS = 50
QUERY_MAX = 100
_NAME = NODE_NAME_PATTERN  # a device name has the same shape
# cn042 mlx5_0/1, cn042/mlx5_0/1, cn042 mlx5_0 1, leaf01 port 5 (iblinkinfo's words), leaf01/5.
_PORT = re.compile(rf"(?P<node>{_NAME})[ /](?:(?P<device>{_NAME})[ /])?(?P<number>\d{{1,3}})")
_DEVICE = re.compile(rf"(?P<node>{_NAME})[ /](?P<device>{_NAME})")  # cn042 mlx5_0, cn042/mlx5_0
_LID = re.compile(r"(?:lid ?)?(\d{1,5})", re.IGNORECASE)  # lid 17, LID 17, 17
UNICAST_LIDS = range(1, 0xC000)  # 0 is no LID (a port the subnet manager has not given one); 0xC000 up multicast
KIND_WORDS = {
    Node.Kind.HOST: "host",
    Node.Kind.SWITCH: "switch",
    Node.Kind.ADAPTER: "CA",  # a channel adapter no agent reports (fabricweb/fabric/adapters.py)
    Node.Kind.COLLECTOR: "fabric collector",
}


@dataclass(frozen=True, slots=True)
class Hit:
    kind: str  # host, switch, fabric collector, port, HCA
    label: str  # its name as the pages write it
    url: str
    detail: str  # what else identifies it: a GUID, the port's state
    exact: bool  # the query names it whole, not a part of its name


def find(query: str) -> tuple[list[Hit], bool]:
    """The hits for `query` (exact ones first), and whether there were more than RESULTS."""
    text = " ".join(query.split())
    if not text:
        return [], False
    hits: list[Hit] = []
    guid = parse_guid(text)
    if guid:
        hits += _by_guid(guid[2:])
    port = _PORT.fullmatch(text)
    if port:
        hits += _ports(port["node"], port["device"], int(port["number"]))
    device = _DEVICE.fullmatch(text)
    if device:
        hits += _devices(device["node"], device["device"])
    lid = _LID.fullmatch(text)
    if lid and int(lid[1]) in UNICAST_LIDS:
        hits += [_port_hit(p, exact=True) for p in _port_rows().filter(lid=int(lid[1])).order_by()[: RESULTS + 1]]
    hits += _models(text)
    if not guid and not port and not device:
        hits += _nodes(text)
    seen: set[str] = set()
    unique = [h for h in hits if not (h.url in seen or seen.add(h.url))]
    return unique[:RESULTS], len(unique) > RESULTS


def _by_guid(digits: str) -> list[Hit]:
    guid = f"0x{digits}"
    sysfs = ":".join(digits[i : i + 4] for i in range(0, 16, 4))
    hits = [_port_hit(p, exact=True) for p in _port_rows().filter(port_guid=guid)[: RESULTS + 1]]
    hits += [_node_hit(n, exact=True) for n in Node.objects.filter(guid=guid)]
    hcas = Device.objects.filter(node_guid__in=[sysfs, guid]).exclude(node__kind=Node.Kind.SWITCH)
    return hits + _hca_hits(hcas, exact=True)


def _devices(node: str, device: str) -> list[Hit]:
    return _hca_hits(Device.objects.filter(node__in=_named(node), name__iexact=device), exact=True)


def _models(text: str) -> list[Hit]:
    """Every HCA of the model the query names: a list, even of one (the query names a model, not that HCA)."""
    types = hca_types(text)
    return _hca_hits(Device.objects.filter(hca_type__in=types), exact=False) if types else []


def _hca_hits(devices, exact: bool) -> list[Hit]:
    hits = []
    for d in (
        devices.exclude(node__kind=Node.Kind.SWITCH)
        .select_related("node")
        .order_by("node__name", "name")[: RESULTS + 1]
    ):
        url = f"{reverse('dashboard:node', args=[d.node.name])}#hca-{quote(d.name)}"
        model = model_words(d.hca_type) or "model unknown"
        hits.append(Hit("HCA", f"{d.node.name} {d.name}", url, f"{model}, node GUID {guid_words(d.node_guid)}", exact))
    return hits


def _named(name: str):
    """Nodes called `name`, any case: the exact spellings through the name's index first."""
    spellings = Node.objects.filter(name__in={name, name.lower(), name.upper()})
    return spellings if spellings.exists() else Node.objects.filter(name__iexact=name)


def _ports(node: str, device: str | None, number: int) -> list[Hit]:
    rows = _port_rows().filter(device__node__in=_named(node), number=number)
    if device and device.lower() != "port":  # `leaf01 port 5`: a switch's port in iblinkinfo's words
        rows = rows.filter(device__name__iexact=device)
    return [_port_hit(p, exact=True) for p in rows.order_by("device__name")[: RESULTS + 1]]


def _nodes(text: str) -> list[Hit]:
    exact = list(_named(text))
    rest = Node.objects.filter(name__icontains=text).exclude(pk__in=[n.pk for n in exact])
    prefix = list(rest.filter(name__istartswith=text).order_by("name")[: RESULTS + 1])
    inside = list(rest.filter(~Q(name__istartswith=text)).order_by("name")[: RESULTS + 1 - len(prefix)])
    return [_node_hit(n, exact=True) for n in exact] + [_node_hit(n, exact=False) for n in prefix + inside]


def _port_rows():
    return Port.objects.select_related("device__node")


def _node_hit(node: Node, exact: bool) -> Hit:
    if node.kind == Node.Kind.SWITCH:
        url = reverse("dashboard:switch", args=[node.name])
        return Hit("switch", node.name, url, f"GUID {guid_words(node.guid)}", exact)
    seen = f"last snapshot {node.last_ingested_at:%Y-%m-%d %H:%M} UTC" if node.last_ingested_at else "no snapshot yet"
    if node.kind == Node.Kind.ADAPTER:
        seen = f"read by the fabric collector, {seen}"
    return Hit(
        KIND_WORDS.get(node.kind, node.kind), node.name, reverse("dashboard:node", args=[node.name]), seen, exact
    )


def _port_hit(port: Port, exact: bool) -> Hit:
    node, device = port.device.node, port.device
    switch = node.kind == Node.Kind.SWITCH
    label = f"{node.name} port {port.number}" if switch else f"{node.name} {device.name}/{port.number}"
    state = IBSTAT_STATES.get(port.state_id, port.state_name) or "state unknown"
    lid = f", LID {port.lid}" if port.lid else ""
    detail = f"{state}{lid}, port GUID {guid_words(port.port_guid)}" if port.port_guid else state + lid
    return Hit("port", label, reverse("dashboard:port", args=[node.name, device.name, port.number]), detail, exact)
