"""Covers fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/node.py (templates/dashboard/port.html and
node.html), fabricweb/inventory/portfacts/statuses.py.

An agentless channel adapter's pages say how it is read, on SQLite and PostgreSQL: its counters come from the
fabric collector's sweeps, dated by the collector's clock; no agent reads its PCIe or sends its read errors. A
host's pages keep the node agent's words."""

from __future__ import annotations

import html
import re

import pytest
from django.utils import timezone

from fabricweb.fabric.models import FabricNode
from fabricweb.inventory.models import Device, Node, Port
from tests.dashboard.dashboard_support import Browser, create_roles, make_user


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture
def viewer(each_db) -> Browser:
    now = timezone.now()
    for name, kind in (("nfs01", Node.Kind.ADAPTER), ("cn001", Node.Kind.HOST)):
        node = Node.objects.create(name=name, kind=kind, first_seen_at=now, last_collected_at=now)
        device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=now)
        Port.objects.create(device=device, number=1, first_seen_at=now)
    create_roles()
    return Browser(make_user("victor", "viewer"))


def test_an_agentless_adapters_port_page_says_the_fabric_collector_reads_it(viewer):
    page = _text(viewer.text("/ports/nfs01/mlx5_0/1/"))
    assert "read by the fabric collector: no agent reports this host" in page
    assert "(the fabric collector's clock, at its sweep)" in page
    assert "PCIe not read: only a host's agent reads its PCIe link" in page
    assert "node's clock" not in page and "the node is stale" not in page


def test_an_agentless_adapters_node_page_says_so_and_shows_no_snapshot_errors(viewer):
    page = _text(viewer.text("/nodes/nfs01/"))
    assert "(the fabric collector's clock)" in page and "node's clock" not in page
    assert "A channel adapter no agent reports" in page
    assert "Read errors of the last snapshot" not in page


def test_a_hosts_pages_keep_the_agents_words(viewer):
    port = _text(viewer.text("/ports/cn001/mlx5_0/1/"))
    assert "(node's clock)" in port and "read by" not in port and "fabric collector" not in port
    node = _text(viewer.text("/nodes/cn001/"))
    assert "(node's clock)" in node and "Read errors of the last snapshot" in node
    assert "A channel adapter no agent reports" not in node


def test_an_adapter_the_sweeps_no_longer_reach_has_its_port_unknown_in_those_words(viewer):
    adapter = Node.objects.get(name="nfs01")
    FabricNode.objects.create(
        guid="0x0000000000000003", node_type=1, num_ports=1, node=adapter, first_seen_at=timezone.now(),
        missing_since=timezone.now(),
    )  # fmt: skip
    page = _text(viewer.text("/ports/nfs01/mlx5_0/1/"))
    assert "unknown: the fabric collector's sweeps no longer read the adapter" in page
    assert "the node is stale" not in page
