"""Covers collectors/mads/pma.py, collectors/mads/sweep.py, fabricweb/fabric/adapters.py,
fabricweb/fabric/ingest.py, fabricweb/inventory/readings.py, fabricweb/telemetry/storage/packing.py,
fabricweb/dashboard/views/port.py; through them fabricweb/fabric/growth.py,
fabricweb/fabric/hostnames.py, fabricweb/fabric/judge.py, fabricweb/fabric/links.py, fabricweb/fabric/linkstore.py,
fabricweb/fabric/nodes.py, fabricweb/fabric/refusals.py, fabricweb/fabric/routestore.py,
fabricweb/fabric/switchports.py, fabricweb/fabric/viewfindings.py.

Every port's counters, on ibsim + opensm + the fabric collector: the channel adapters no host agent
reports are read by the collector's PMA queries, as central names them, and stored as nodes of their own whose
ports have counters, samples and findings like a host's; a host whose agent reports its adapters is never read by
the collector too."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from collectors import read_host
from collectors import to_dict as host_dict
from collectors.sim import Fabric, SwitchOptions
from fabricweb.fabric import adapters
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.health.models import Event
from fabricweb.inventory import readings
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.ingest import ingest_batch
from fabricweb.telemetry.models import NodePoll
from fabricweb.telemetry.storage.packing import entries_of, unpack
from tests.dashboard.dashboard_support import Browser, create_roles, make_user
from tests.exporter.exporter_support import by_name, port, scrape
from tests.ibsim_support import Ibsim, needs_ibsim

pytestmark = needs_ibsim

SWEEP = (
    "import json, sys\n"
    "from collectors.mads.snapshot import to_dict\n"
    "from collectors.mads.sweep import Sweeper, open_port\n"
    "cas = frozenset(int(guid, 16) for guid in sys.argv[1:])\n"
    "with open_port() as p: print(json.dumps(to_dict(Sweeper(p, 'fabric-test').sweep(routes=False, adapters=cas))))"
)


def sweep(sim: Ibsim, read: list[str]) -> dict:
    """One full sweep by the fabric collector reading the adapters `read` (node GUIDs) too, as its poll says."""
    r = sim.run(sys.executable, "-c", SWEEP, *read)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def to_read() -> list[str]:
    """The adapters a poll names once the sweeps have reached them for longer than their grace."""
    return adapters.to_read(timezone.now() + timedelta(hours=1))


def agent_reports(sim: Ibsim, host: str) -> None:
    """`host`'s node agent sends a snapshot of its sysfs tree (the simulator's, whose adapters are ibsim's)."""
    tree = read_host(os.path.join(sim.fabric.out, host), host=host, use_verbs=False, now=time.time())
    assert not ingest_batch([host_dict(tree)]).rejected


def samples(node: Node, port: Port | None = None) -> int:
    """The samples stored of `port`, or of every port of `node`."""
    polls = NodePoll.objects.filter(node=node).values_list("ports", flat=True)
    if port is None:
        return sum(len(unpack(bytes(row))) for row in polls)
    return sum(len(entries_of(bytes(row), port.pk)) for row in polls)


def guids_of(snap: dict, host: str) -> set[str]:
    return {row[0] for row in snap["nodes"]["rows"] if row[1] == 1 and row[3].split()[0] == host}


def counted(snap: dict) -> set[str]:
    """The node GUIDs whose ports the sweep carries counters of."""
    return {snap["nodes"]["rows"][row[0]][0] for row in snap["counters"]["rows"]}


@pytest.fixture
def sim(tmp_path, request) -> Ibsim:
    # cn001 (two adapters) on leaf01, cn002 (two) on leaf01 and leaf02, cn003 (one dual-port) on leaf02; cn004 none.
    return Ibsim(Fabric.create(str(tmp_path / "sim"), 4, seed=5, switches=SwitchOptions(switch_ports=12)), request)


def test_an_agentless_adapters_counters_reach_its_port_page_metrics_and_rules_and_an_agents_host_is_not_read(
    sim, each_db
):
    agent_reports(sim, "cn001")
    first = sweep(sim, adapters.to_read())  # nothing known of the fabric yet: the switches alone
    ingest_fabric(first)
    cn001, cn002 = guids_of(first, "cn001"), guids_of(first, "cn002")
    assert len(cn001) == 2 and len(cn002) == 2
    assert counted(first) & (cn001 | cn002) == set()
    assert adapters.to_read() == []  # first reached a moment ago: their hosts' agents may be starting
    read = to_read()
    assert set(read) == guids_of(first, "cn002") | guids_of(first, "cn003")  # every adapter but cn001's

    ingest_fabric(sweep(sim, read))  # the adapters' baseline
    os.write(sim.holder, b'PerformanceSet "cn002 mlx5_0"[1] PortCounters.SymbolErrorCounter=500\n')
    last = sweep(sim, to_read())
    assert counted(last) & cn001 == set()  # cn001's agent reads its ports: the collector never queries them
    assert counted(last) >= cn002
    result = ingest_fabric(last)
    assert (result.switches, result.adapters) == (3, 3)
    assert "3 switches, 3 agentless adapters, " in result.summary()

    ca = Node.objects.get(guid=min(cn002, key=lambda g: int(g, 16)))  # "cn002 mlx5_0": the lower GUID here
    assert (ca.name, ca.kind) == ("cn002", Node.Kind.ADAPTER)
    p = readings.attach([Port.objects.get(device__node=ca, device__name="mlx5_0", number=1)])[0]
    assert p.counters["symbol_error"] == 500
    assert p.port_guid is not None and p.peer_label == "leaf01 port 3"
    assert samples(ca, p) == 2
    event = Event.objects.get(node=ca, resolved_at__isnull=True)  # its one finding: no PCIe, agent or norm noise
    assert (event.kind, event.port_id) == ("symbol_errors", p.pk)
    assert "cn002 mlx5_0/1" in event.message and "500 symbol errors" in event.message, event.message
    assert "leaf01 port 3" in event.message

    create_roles()
    page = Browser(make_user("victor", "viewer")).text("/ports/cn002/mlx5_0/1/")
    assert "<th>symbol_error</th><td>500</td>" in page
    assert "500 symbol errors" in page
    assert "the fabric collector: no agent reports this host" in page  # how it is read, in its words
    assert "(the fabric collector's clock, at its sweep)" in page and "node's clock" not in page
    assert "/ports/cn002/mlx5_0/1/" in Browser(make_user("nina", "viewer")).text("/nodes/cn002/")
    text = scrape(Client())
    assert by_name(text, "infiniband_symbol_error_total")[port("cn002", "mlx5_0", 1)] == 500

    # cn001's ports have one source of samples: its agent's one snapshot, and no adapter node of its GUIDs.
    assert not Node.objects.filter(guid__in=cn001).exists()
    assert samples(Node.objects.get(name="cn001")) == 2  # its two adapters' one port each, from its one snapshot
    assert set(Node.objects.filter(kind=Node.Kind.ADAPTER).values_list("name", flat=True)) == {
        "cn002",
        f"cn002-{max(cn002, key=lambda g: int(g, 16))[-4:]}",
        "cn003",
    }


def test_a_host_whose_agent_comes_up_is_no_longer_read_and_takes_its_name_back(sim, each_db):
    ingest_fabric(sweep(sim, []))
    ingest_fabric(sweep(sim, to_read()))
    cn003 = Node.objects.get(name="cn003", kind=Node.Kind.ADAPTER)
    before = samples(cn003)
    assert before == 2  # its two ports, once
    read = to_read()  # the poll sent before its agent came up
    agent_reports(sim, "cn003")
    assert cn003.guid not in to_read()
    ingest_fabric(sweep(sim, read))  # the sweep still carries its counters: not stored twice
    cn003.refresh_from_db()
    assert cn003.name == f"cn003-{cn003.guid[-4:]}" and cn003.kind == Node.Kind.ADAPTER
    assert samples(cn003) == before
    host = Node.objects.get(name="cn003")
    assert host.kind == Node.Kind.HOST
    assert samples(host) == 2


def test_an_agentless_adapter_unplugged_is_one_link_down_said_by_its_switch_port(sim, each_db):
    ingest_fabric(sweep(sim, []))
    ingest_fabric(sweep(sim, to_read()))
    ca = Node.objects.get(name="cn002", kind=Node.Kind.ADAPTER)
    switch_port = Port.objects.get(device__node__name="leaf01", number=3)
    assert switch_port.link_owner  # no agent reports the adapter: its switch port speaks for the link
    os.write(sim.holder, b'Unlink "leaf01"[3]\n')  # cn002 mlx5_0's cable
    for _ in range(2):
        ingest_fabric(sweep(sim, to_read()))  # the adapter, no longer reached, is not read
    down = Event.objects.get(kind="down", resolved_at__isnull=True)
    assert down.port_id == switch_port.pk
    assert down.message.startswith("leaf01 port 3 ↔ cn002 mlx5_0/1: "), down.message
    assert not Event.objects.filter(node=ca, resolved_at__isnull=True).exists()
