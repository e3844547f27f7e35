"""Covers collectors/sim/, collectors/__main__.py.

`simulate --fabric` against a real ibsim: what ibsim trains and reports is what the host trees say,
and the faults given to a simulator reach ibsim through its console FIFO.

Each test runs its own ibsim (its own IBSIM_SOCKNAME) on a small fabric: 6 nodes, 2 leaves, 1 spine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from collectors import read_host
from collectors.sim import Fabric, SwitchOptions
from harness import stop, wait_for
from tests.ibsim_support import ROOT, Ibsim, needs_ibsim, short

pytestmark = needs_ibsim
NODES, SEED = 6, 3  # seed 3: IB ports cabled leaf01 1-5 (cn001-cn003), leaf02 1-5 (cn003, cn004, cn006)


@pytest.fixture
def ibsim(tmp_path, request):
    """Build a fabric (options: SwitchOptions fields) and start ibsim on it; everything stops at the end."""

    def start(**options) -> Ibsim:
        fabric = Fabric.create(str(tmp_path / "sim"), NODES, seed=SEED, switches=SwitchOptions(**options))
        return Ibsim(fabric, request)

    return start


def host_port(fabric: Fabric, key: str):
    node, dev, number = key.split("/")
    snap = read_host(os.path.join(fabric.out, node), host=node, use_verbs=False)
    d = next(d for d in snap.devices if d.name == dev)
    return next(p for p in d.ports if p.number == int(number))


def far_of(fabric: Fabric, switch_port: str) -> str:
    return fabric.cabling.by_end[switch_port].far_end.key


def test_ibsim_trains_every_link_as_the_host_trees_and_fabric_net_say(ibsim):
    sim = ibsim(faults=("cn002/mlx5_0/1:speed=SDR", "leaf02/21:width=4X"))
    fabric, links = sim.fabric, sim.links()
    slow_host = "cn002 mlx5_0"
    for link in fabric.cabling.links:
        for end, far in ((link.switch_end, link.far_end), (link.far_end, link.switch_end)):
            seen = links[(end.net_id, end.port)]
            assert seen["far"] == (far.net_id, far.port)
            if slow_host in (end.net_id, far.net_id):
                assert seen["link"] == ("12X", "2.5", "Active", "LinkUp")
                assert "Could be 10.0 Gbps" in seen["could"]
            elif link.key == "leaf02/21":
                assert seen["link"] == ("4X", "10.0", "Active", "LinkUp")
                assert "Could be 12X" in seen["could"]
            else:  # w=8 s=4: the only link ibsim does not mark "Could be"
                assert (seen["link"], seen["could"]) == (("12X", "10.0", "Active", "LinkUp"), "")
            if "/" in end.node:  # a host port: ibsim's port GUID is the one its tree's gids/0 carries
                p = host_port(fabric, end.key)
                assert int(seen["guid"], 16) == int(p.port_guid, 16)
                assert (p.rate.lanes, p.rate.speed) == (
                    int(seen["link"][0][:-1]),
                    "SDR" if slow_host in end.net_id else "QDR",
                )
    cabled = {(e.net_id, e.port) for x in fabric.cabling.links for e in (x.switch_end, x.far_end)}
    assert {key for key, seen in links.items() if seen["far"]} == cabled


def test_the_fabric_collector_sees_the_switches_and_host_ports_the_trees_describe(ibsim):
    sim = ibsim()
    r = sim.run(sys.executable, "-m", "collectors", "fabric", "--format", "json")
    assert r.returncode == 0, r.stderr
    sweep = json.loads(r.stdout)
    nodes = [dict(zip(sweep["nodes"]["columns"], row, strict=True)) for row in sweep["nodes"]["rows"]]
    switches = sorted(short(n["description"]) for n in nodes if n["type"] == 2)
    assert switches == ["leaf01", "leaf02", "spine01"]
    ports = [dict(zip(sweep["ports"]["columns"], row, strict=True)) for row in sweep["ports"]["rows"]]
    by_guid = {p["port_guid"]: p for p in ports if nodes[p["node"]]["type"] == 1}
    fabric = sim.fabric
    seen = 0
    for link in fabric.cabling.links:
        if "/" not in link.far_end.node:
            continue
        tree = host_port(fabric, link.far_end.key)
        swept = by_guid[tree.port_guid]  # ingest joins the two views of a port by this GUID
        assert (swept["lanes"], swept["speed"]) == (tree.rate.lanes, tree.rate.speed) == (12, "QDR")
        assert short(nodes[swept["peer_node"]]["description"]) == link.switch_end.node
        assert swept["peer_port"] == link.switch_end.port
        seen += 1
    assert seen == len(by_guid) == 10
    assert sweep["errors"] == []


def test_a_switch_port_down_given_to_a_running_simulator_goes_down_in_ibsim_and_comes_back(ibsim, request):
    sim = ibsim()
    fabric, host = sim.fabric, far_of(sim.fabric, "leaf02/3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "collectors", "simulate", "--out", fabric.out, "--nodes", str(NODES),
         "--seed", str(SEED), "--fabric", "--interval", "0.2", "--ibsim-ctl", sim.ctl],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    request.addfinalizer(lambda: stop(proc))

    def leaf02_3():
        return sim.links()[("leaf02", 3)]["link"]

    fault = subprocess.run(
        [sys.executable, "-m", "collectors", "fault", "--out", fabric.out, "add", "leaf02/3:down"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert fault.returncode == 0, fault.stderr
    wait_for("leaf02 port 3 to go down in ibsim", lambda: leaf02_3() == (None, None, "Down", "Polling"))
    wait_for(f"{host} to go down in its tree", lambda: host_port(fabric, host).state.name == "DOWN")
    assert host_port(fabric, host).phys_state.name == "Polling"
    fault = subprocess.run(
        [sys.executable, "-m", "collectors", "fault", "--out", fabric.out, "remove", "leaf02/3:down"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert fault.returncode == 0, fault.stderr
    wait_for("leaf02 port 3 to come back", lambda: leaf02_3() == ("12X", "10.0", "Initialize", "LinkUp"))
    sim.sweep()  # a subnet manager brings it to Active
    assert leaf02_3() == ("12X", "10.0", "Active", "LinkUp")
    assert host_port(fabric, host).state.name == "ACTIVE"
    stop(proc)
    assert proc.returncode == 0, proc.stderr.read()


def test_switch_port_symbol_errors_show_in_perfquery(ibsim):
    sim = ibsim()
    fabric = sim.fabric
    fabric.use_console(sim.ctl)
    fabric.add_fault("leaf02/21:symbol-errors=2/s", "leaf01/3:symbol-errors=1/min")
    fabric.step(10)
    fabric.step(50)
    lids = {node: seen["lid"] for (node, _), seen in sim.links().items()}

    def symbol_errors(switch, port):
        r = sim.run("perfquery", str(lids[switch]), str(port))
        assert r.returncode == 0, r.stderr
        return int(re.search(r"SymbolErrorCounter:\.+(\d+)", r.stdout).group(1))

    wait_for("the symbol errors in ibsim", lambda: symbol_errors("leaf02", 21) == 120)
    assert symbol_errors("leaf01", 3) == 1
    assert symbol_errors("spine01", 21) == 0  # the far end of leaf02 port 21 counts its own


def test_a_muted_switch_stops_answering_and_a_switch_down_takes_its_links(ibsim):
    sim = ibsim()
    fabric = sim.fabric
    fabric.use_console(sim.ctl)
    fabric.add_fault("spine01:mute")
    fabric.step(10)

    def discovered():
        r = sim.run("ibnetdiscover")
        return r.stdout, r.stderr

    wait_for("spine01 to stop answering", lambda: "timed out" in discovered()[1])
    assert "spine01" not in discovered()[0]
    fabric.clear_faults()
    fabric.step(10)
    wait_for("spine01 to answer again", lambda: "spine01" in discovered()[0])
    assert "timed out" not in discovered()[1]

    fabric.add_fault("leaf02:down")
    fabric.step(10)
    wait_for("leaf02's uplinks to go down", lambda: sim.links()[("spine01", 21)]["link"][2] == "Down")
    links = sim.links()
    assert all(seen["link"][2] == "Down" for (node, port), seen in links.items() if node == "spine01" and port > 20)
    assert not any(node == "leaf02" for node, _ in links)  # nothing reaches it
    assert host_port(fabric, far_of(fabric, "leaf02/1")).state.name == "DOWN"
    fabric.clear_faults()
    fabric.step(10)
    sim.sweep()
    wait_for("leaf02 to come back", lambda: ("leaf02", 1) in sim.links())
    assert sim.links()[("leaf02", 1)]["link"] == ("12X", "10.0", "Active", "LinkUp")
