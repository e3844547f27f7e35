"""Covers fabricweb/dashboard/porthealth.py, fabricweb/dashboard/hostgrid.py, fabricweb/dashboard/overviewmodel.py,
fabricweb/dashboard/grid.py, fabricweb/dashboard/views/wall.py, fabricweb/dashboard/views/exports.py,
fabricweb/dashboard/finder.py (templates/dashboard/overview.html, _counts.html and wall.html).

An agentless channel adapter (a storage server, a gateway: inventory Node kind adapter, its ports read by the
fabric collector's sweeps) is on the overview beside the hosts, on SQLite and PostgreSQL: its block marked
"(CA)", its ports' health as a host's, counted apart from the hosts and never as a stale host; on the wall, in
ports.csv and in the search too. The overview's queries stay as many, its kept grid and model show an adapter
appearing or changing at the next request, and the adapter's names from the fabric are escaped."""

from __future__ import annotations

import csv
import io
import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fabricweb.dashboard import hostgrid, overviewmodel
from fabricweb.fabric.models import FabricNode
from fabricweb.inventory.models import Device, Node, Port
from tests.api.api_support import event, port
from tests.dashboard.dashboard_support import grid_cell, overview_grid

ACTIVE, LINK_UP, DOWN, POLLING = 4, 5, 1, 2
# Not one of the simulator's GUIDs (0x0c42a10300bcf0NN are its hosts' cards): through real ingest the adapter
# would be taken for a host's card.
NFS01_GUID = "0x0c42a10300ab5101"


def add_adapter(name: str, guid: str, device: str = "mlx5_0") -> Node:
    """An adapter as the sweeps store it: port 1 up; port 2 up with an open symbol-errors finding."""
    now = timezone.now()
    node = Node.objects.create(
        name=name, kind=Node.Kind.ADAPTER, guid=guid, first_seen_at=now, last_collected_at=now, last_ingested_at=now
    )
    FabricNode.objects.create(guid=guid, node_type=1, num_ports=2, first_seen_at=now, node=node)
    hca = Device.objects.create(node=node, name=device, first_seen_at=now)
    for number in (1, 2):
        Port.objects.create(
            device=hca, number=number, first_seen_at=now, state_id=ACTIVE, phys_state_id=LINK_UP, ever_up=True,
            speed="HDR", lanes=4,
        )  # fmt: skip
    event(Port.objects.get(device=hca, number=2), "symbol_errors", "warning", now)
    return node


def test_an_adapter_is_on_the_overview_marked_as_read_by_the_fabric_collector(viewer, faulty):
    add_adapter("nfs01", NFS01_GUID)
    html = viewer.text("/")
    assert '<div class="gnode ca"><a class="gn" href="/nodes/nfs01/"' in html
    assert 'title="nfs01: CA, read by the fabric collector (no agent reports it)">nfs01 (CA)</a>' in html
    assert grid_cell(html, "nfs01/mlx5_0/1") == "up"
    assert grid_cell(html, "nfs01/mlx5_0/2") == "erroring nfs01 mlx5_0/2: errors (symbol errors)"
    assert "a node marked (CA) is a channel adapter no agent reports" in html  # the legend
    assert "cn001 (CA)" not in html and '<div class="gnode"><a class="gn" href="/nodes/cn001/">' in html


def test_an_adapters_down_port_is_down_and_it_is_counted_apart_from_the_hosts(viewer, faulty):
    add_adapter("nfs01", NFS01_GUID)
    Port.objects.filter(device__node__name="nfs01", number=1).update(state_id=DOWN, phys_state_id=POLLING)
    hosts = viewer.get("/").context["counts"]
    host_ports = Port.objects.filter(device__node__kind=Node.Kind.HOST).count()
    assert (hosts.nodes, hosts.adapters, hosts.stale_nodes, hosts.ports) == (3, 1, 0, host_ports + 2)
    # faulty's cn003 mlx5_1/1 is down; the adapter's port 1 too, its port 2 erroring
    assert (hosts.down, hosts.erroring) == (2, 1)
    html = viewer.text("/")
    assert grid_cell(html, "nfs01/mlx5_0/1").startswith("down")
    assert '<b id="count-adapters">1</b> CAs, read by the fabric collector' in html
    assert f'<b id="count-ports">{host_ports + 2}</b> host and CA ports:' in html


def test_an_adapter_is_never_a_stale_host(viewer, faulty):
    adapter = add_adapter("nfs01", NFS01_GUID)
    Node.objects.filter(pk=adapter.pk).update(stale=True, last_ingested_at=timezone.now())
    page = viewer.get("/")
    assert page.context["counts"].stale_nodes == 0
    assert "nfs01 (stale)" not in page.content.decode()


def test_the_overview_costs_the_same_queries_with_adapters(viewer, faulty):
    def queries() -> int:
        hostgrid.KEPT.forget()
        overviewmodel.KEPT.forget()
        with CaptureQueriesContext(connection) as seen:
            viewer.get("/")
        return len(seen)

    # A host's port with an open problem too: with none at all, the problems' ports are not looked up (a query less).
    event(port("cn001", "mlx5_0", 1), "symbol_errors", "warning", timezone.now())
    hosts_only = queries()
    for n in range(4):
        add_adapter(f"nfs0{n}", f"0x0c42a10300bcf1{n}0")
    assert queries() == hosts_only
    with CaptureQueriesContext(connection) as warm:  # the kept model: the same as with hosts alone
        viewer.get("/")
    overviewmodel.KEPT.forget()
    with CaptureQueriesContext(connection) as kept_blocks:  # the model again, every block kept
        viewer.get("/")
    assert len(warm) < len(kept_blocks) < hosts_only


def test_an_adapter_appearing_or_changing_shows_at_once(viewer, faulty):
    assert "nfs01" not in overview_grid(viewer.text("/"))  # the model and the blocks are kept now
    adapter = add_adapter("nfs01", NFS01_GUID)
    assert grid_cell(viewer.text("/"), "nfs01/mlx5_0/1") == "up"
    # A sweep finds port 1 down: ingest writes the port and the node's last_ingested_at.
    Port.objects.filter(device__node=adapter, number=1).update(state_id=DOWN, phys_state_id=POLLING)
    Node.objects.filter(pk=adapter.pk).update(last_ingested_at=timezone.now())
    assert grid_cell(viewer.text("/"), "nfs01/mlx5_0/1").startswith("down")
    # The sweeps no longer reach it: its ports are unknown, said in the collector's words, not a stale host's.
    FabricNode.objects.filter(node=adapter).update(missing_since=timezone.now())
    html = viewer.text("/")
    unknown = "unknown nfs01 mlx5_0/2: unknown: the fabric collector's sweeps do not reach it (symbol errors)"
    assert grid_cell(html, "nfs01/mlx5_0/2") == unknown
    assert "nfs01 (stale)" not in html and viewer.get("/").context["counts"].stale_nodes == 0


def test_an_adapters_names_from_the_fabric_are_escaped(viewer, faulty):
    # fabric.naming makes names of plain words; were one to come through (an older row), it is text all the same.
    # No "/" in them: a name is a path segment of the pages' addresses.
    evil, description = '<script>alert(1)"', "<script>alert(1)</script>"
    adapter = add_adapter("nfs01", NFS01_GUID)
    Node.objects.filter(pk=adapter.pk).update(name=f"nfs{evil}")
    Device.objects.filter(node=adapter).update(name=f"mlx{evil}", node_desc=description)
    FabricNode.objects.filter(node=adapter).update(description=description)
    for page in ("/", "/wall/", '/nodes/nfs<script>alert(1)"/'):
        html = viewer.text(page)
        assert "<script>alert(1)" not in html, page
        assert "nfs&lt;script&gt;alert(1)&quot;" in html, page


def test_the_wall_shows_an_adapters_tile(viewer, faulty):
    add_adapter("nfs01", NFS01_GUID)
    html = viewer.text("/wall/")
    tile = re.search(r'<div class="tile (\w+) ca"><span class="tn">nfs01 \(CA\)</span> <span class="tm">(.) (\d)', html)
    assert tile and tile.groups() == ("erroring", "!", "1")
    assert "a CA (a channel adapter no agent reports, read by the fabric collector)" in html
    assert "host and CA ports up and healthy" in html


def test_ports_csv_and_the_search_list_an_adapter(viewer, faulty):
    add_adapter("nfs01", NFS01_GUID)
    response = viewer.get("/ports.csv", {"node": "nfs01"})
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    header, ports = rows[0], rows[1:]
    assert [(r[0], r[2], r[header.index("health")], r[header.index("read by")]) for r in ports] == [
        ("nfs01", "1", "up", "fabric collector"),
        ("nfs01", "2", "erroring", "fabric collector"),
    ]
    host = csv.reader(io.StringIO(b"".join(viewer.get("/ports.csv", {"node": "cn001"}).streaming_content).decode()))
    assert {r[header.index("read by")] for r in list(host)[1:]} == {"node agent"}
    found = viewer.text("/search/", {"q": "nfs"})
    assert re.search(
        r"<td>CA</td><td><a href=\"/nodes/nfs01/\">nfs01</a></td><td>read by the fabric collector, ", found
    )


def test_the_state_filter_selects_an_adapters_ports(viewer, faulty):
    adapter = add_adapter("nfs01", NFS01_GUID)
    Port.objects.filter(device__node=adapter, number=1).update(state_id=DOWN, phys_state_id=POLLING)
    html = viewer.text("/", {"state": "down"})
    assert grid_cell(html, "nfs01/mlx5_0/1").startswith("down") and "nfs01/mlx5_0/2" not in overview_grid(html)
    assert "nfs01 (CA)" in overview_grid(html)
