"""Covers fabricweb/fabric/ingest.py, fabricweb/fabric/paths.py.

Routed paths centrally, from the forwarding tables a sweep stored, against `ibtracert` on ibsim + opensm.

The fabric collector's sweep (with its tables) is ingested into each database; the links the route
graph walks between two hosts must be exactly the ones `ibtracert` walks between every port LID of
one and every port LID of the other, both ways, plus each host's own link to its leaf.
"""

from __future__ import annotations

import pytest

from collectors.sim import Fabric, SwitchOptions
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Link, SwitchRoutes
from fabricweb.fabric.paths import RouteGraph
from tests.ibsim_support import Ibsim, host_lids, needs_ibsim, switch_ends, traced

pytestmark = needs_ibsim


@pytest.fixture
def sim(tmp_path, request) -> Ibsim:
    options = SwitchOptions(switch_ports=12, leaves=3, spines=2)
    return Ibsim(Fabric.create(str(tmp_path / "sim"), 9, seed=5, switches=options), request)


def walked_ends(link_ids, switches: set[str]) -> set[tuple[str, int]]:
    return switch_ends(Link.objects.filter(pk__in=link_ids), switches)


def test_paths_between_hosts_are_the_links_ibtracert_walks(sim, each_db):
    snap = sim.snapshot()
    result = ingest_fabric(snap)
    assert result.routes == 5 and SwitchRoutes.objects.count() == 5
    graph = RouteGraph.load()
    lids = host_lids(snap)
    switches = {row[0] for row in snap["nodes"]["rows"] if row[1] == 2}
    leaf_of = {}
    for link in Link.objects.all():
        for host_end, switch_guid in ((link.a_label, link.b_guid), (link.b_label, link.a_guid)):
            if switch_guid in switches and not host_end.startswith(("leaf", "spine")):
                leaf_of.setdefault(host_end.split()[0], set()).add(switch_guid)
    one_leaf = [h for h in sorted(leaf_of) if len(leaf_of[h]) == 1]
    same_leaf = [h for h in one_leaf if leaf_of[h] == leaf_of[one_leaf[0]]][:2]
    other_leaf = next(h for h in one_leaf if leaf_of[h] != leaf_of[one_leaf[0]])
    assert len(same_leaf) == 2
    for hosts in (same_leaf, [same_leaf[0], other_leaf], sorted(lids)[:4]):
        paths = graph.paths(hosts)
        assert paths.findings == [] and paths.unmapped == []
        own = {graph.own_link[end] for host in hosts for end in graph.ends_of[host]}
        assert walked_ends(paths.links, switches) == traced(sim, lids, hosts) | walked_ends(own, switches), hosts
    # Two hosts on one leaf: their own links only, no inter-switch link.
    inside = graph.paths(same_leaf)
    assert not Link.objects.filter(pk__in=inside.links, inter_switch=True).exists()
    across = graph.paths([same_leaf[0], other_leaf])
    assert Link.objects.filter(pk__in=across.links, inter_switch=True).count() >= 2


def test_a_host_that_lost_its_link_keeps_it_and_a_path_with_no_route_is_a_finding(sim, each_db):
    ingest_fabric(sim.snapshot())
    graph = RouteGraph.load()
    assert graph.paths(["cn001", "nosuchhost"]).unmapped == ["nosuchhost"]
    # A table with no route to a LID: a finding naming the switch and the destination, not an exception.
    routes = SwitchRoutes.objects.select_related("switch").order_by("switch__description")
    target = graph.lids_of[graph.ends_of["cn004"][0]][0]
    for row in routes:
        table = bytearray(row.lft)
        if target < len(table) and table[target] not in (0, 255):
            hop = graph.hops[graph.index[row.switch.guid]].get(table[target])
            if hop is not None and hop.switch >= 0:  # a hop towards another switch: cut it there
                table[target] = 255
                row.lft = bytes(table)
                row.save()
    broken = RouteGraph.load().paths(["cn001", "cn004"])
    assert broken.findings and all(f.kind == "no-route" for f in broken.findings)
    assert any(f"no route to LID {target}" in f.text for f in broken.findings)
    assert graph.own_link[graph.ends_of["cn004"][0]] in broken.links


def test_a_routing_loop_is_a_finding_naming_the_switches_it_goes_round(sim, each_db):
    ingest_fabric(sim.snapshot())
    graph = RouteGraph.load()
    source_leaf, _ = graph.leaf_of[graph.ends_of["cn001"][0]]
    destination = graph.ends_of["cn009"][0]
    target = graph.lids_of[destination][0]
    assert graph.leaf_of[destination][0] != source_leaf
    up = graph.hops[source_leaf][graph.tables[source_leaf][target]]  # leaf -> spine
    back = next(port for port, hop in graph.hops[up.switch].items() if hop.switch == source_leaf)
    spine = SwitchRoutes.objects.get(switch__guid=next(g for g, i in graph.index.items() if i == up.switch))
    table = bytearray(spine.lft)
    table[target] = back  # the spine sends it back down to the leaf it came from
    spine.lft = bytes(table)
    spine.save()
    paths = RouteGraph.load().paths(["cn001", "cn009"])
    loops = [f for f in paths.findings if f.kind == "loop"]
    assert len(loops) == 1, paths.findings
    leaf, top = graph.names[source_leaf], graph.names[up.switch]
    assert f"routing loop to LID {target}" in loops[0].text and f"{leaf} → {top} → {leaf}" in loops[0].text


def test_a_port_with_lmc_1_has_both_its_lids_walked_to(sim, each_db):
    # opensm with LMC 1: every channel adapter port answers two LIDs, and routes to each may differ.
    r = sim.run("opensm", "-o", "-l", "1", "-f", str(sim.fabric.out) + "/opensm-lmc.log")
    assert r.returncode == 0, r.stdout + r.stderr
    snap = sim.snapshot()
    ingest_fabric(snap)
    graph = RouteGraph.load()
    ends = {end: graph.lids_of[end] for host in ("cn001", "cn009") for end in graph.ends_of[host]}
    assert all(len(lids) == 2 and lids[1] == lids[0] + 1 for lids in ends.values()), ends
    switches = {row[0] for row in snap["nodes"]["rows"] if row[1] == 2}
    walked = set()
    for source in graph.ends_of["cn001"]:
        for target in graph.ends_of["cn009"]:
            for lid in graph.lids_of[target]:
                walked |= sim.tracert(graph.lids_of[source][0], lid)
            for lid in graph.lids_of[source]:
                walked |= sim.tracert(graph.lids_of[target][0], lid)
    paths = graph.paths(["cn001", "cn009"])
    own = {graph.own_link[end] for end in ends}
    assert walked_ends(paths.links, switches) == walked | walked_ends(own, switches)
