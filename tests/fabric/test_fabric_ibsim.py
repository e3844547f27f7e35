"""Covers collectors/__main__.py.

The fabric collector against a real fabric stack: ibsim, opensm, and infiniband-diags as the reference.

Every switch port's state, width, speed and far end must read as `iblinkinfo` reads them, and its
counters as `perfquery` and `perfquery -x` read them. A switch that stops answering costs its own
values and an error, never the sweep. Each test runs its own ibsim on a simulated fabric (6 hosts,
2 leaves, 1 spine) with its own IBSIM_SOCKNAME.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from collectors.sim import Fabric, SwitchOptions
from tests.ibsim_support import Ibsim, needs_ibsim, short

pytestmark = needs_ibsim
NODES, SEED = 6, 3


@pytest.fixture
def ibsim(tmp_path, request):
    def start(*faults: str) -> Ibsim:
        fabric = Fabric.create(str(tmp_path / "sim"), NODES, seed=SEED, switches=SwitchOptions(faults=faults))
        return Ibsim(fabric, request)

    return start


def sweep(sim: Ibsim, *args: str) -> dict:
    r = sim.run(sys.executable, "-m", "collectors", "fabric", "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def rows(snap: dict, section: str) -> list[dict]:
    return [dict(zip(snap[section]["columns"], row, strict=True)) for row in snap[section]["rows"]]


def switch_ports(snap: dict) -> dict[tuple[str, int], dict]:
    """(switch name, port) -> the port's row, its counters and its far end's (name, port)."""
    nodes = rows(snap, "nodes")
    counters = {(c["node"], c["port"]): c for c in rows(snap, "counters")}
    out = {}
    for p in rows(snap, "ports"):
        node = nodes[p["node"]]
        if node["type"] != 2 or p["port"] == 0:
            continue
        far = None
        if p["peer_node"] is not None:
            far = (short(nodes[p["peer_node"]]["description"]), p["peer_port"])
        out[short(node["description"]), p["port"]] = {**p, "far": far, "counters": counters.get((p["node"], p["port"]))}
    return out


def lids(snap: dict) -> dict[str, int]:
    nodes = rows(snap, "nodes")
    return {short(nodes[p["node"]]["description"]): p["lid"] for p in rows(snap, "ports") if p["port"] == 0}


STATES = {1: "Down", 2: "Initialize", 3: "Armed", 4: "Active"}
PHYS = {2: "Polling", 3: "Disabled", 5: "LinkUp"}
LANE_GBPS = {"SDR": "2.5", "DDR": "5.0", "QDR": "10.0"}


def test_every_switch_port_reads_as_iblinkinfo_reads_it(ibsim):
    sim = ibsim("cn002/mlx5_0/1:speed=SDR", "leaf02/21:width=4X", "leaf01/22:speed=DDR")
    ours, theirs = switch_ports(sweep(sim)), sim.links()
    switch_rows = {key: value for key, value in theirs.items() if not key[0].startswith("cn")}
    assert set(ours) == set(switch_rows) and len(ours) == 3 * 40
    for key, port in ours.items():
        width, gbps, state, phys = switch_rows[key]["link"]
        assert (STATES[port["state"]], PHYS[port["phys_state"]]) == (state, phys), key
        if phys == "LinkUp":
            assert (f"{port['lanes']}X", LANE_GBPS[port["speed"]]) == (width, gbps), key
        assert port["far"] == switch_rows[key]["far"], key
    # What iblinkinfo marks "Could be", the collector's text marks "could be": the same ports.
    text = sim.run(sys.executable, "-m", "collectors", "fabric").stdout
    marked_theirs = {key for key, value in switch_rows.items() if value["could"]}
    marked_ours = set()
    switch = None
    for line in text.splitlines():
        if line.startswith("Switch "):
            switch = short(line.split()[1])
        elif "(could be" in line:
            marked_ours.add((switch, int(line.split()[1])))
    # The SDR host link at its switch end, the 4X and the DDR uplinks at both ends.
    assert marked_ours == marked_theirs and len(marked_ours) == 5


def perfquery(sim: Ibsim, lid: int, port: int, extended: bool) -> dict[str, int]:
    r = sim.run("perfquery", *(["-x"] if extended else []), str(lid), str(port))
    assert r.returncode == 0, r.stderr
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+):\.*(\d+)$", r.stdout, re.M)}


def test_switch_port_counters_read_as_perfquery_reads_them(ibsim):
    sim = ibsim()
    settings = {
        ("leaf01", 1): "SymbolErrorCounter=77",
        ("leaf01", 21): "LinkDownedCounter=3",
        ("spine01", 2): "PortRcvErrors=1234",
        ("leaf02", 5): "PortXmitDiscards=99",
    }
    for (switch, port), value in settings.items():
        os.write(sim.holder, f'PerformanceSet "{switch}"[{port}] PortCounters.{value}\n'.encode())
    snap = sweep(sim)
    ours, lid = switch_ports(snap), lids(snap)
    names = {
        "SymbolErrorCounter": "symbol_error",
        "LinkDownedCounter": "link_downed",
        "PortRcvErrors": "port_rcv_errors",
        "PortXmitDiscards": "port_xmit_discards",
        "LinkErrorRecoveryCounter": "link_error_recovery",
        "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
        "VL15Dropped": "VL15_dropped",
    }
    for key in [*settings, ("spine01", 40), ("leaf02", 21)]:
        counters = ours[key]["counters"]
        basic = perfquery(sim, lid[key[0]], key[1], extended=False)
        for theirs, mine in names.items():
            assert counters[mine] == basic[theirs], (key, mine)
        # Data and packets move with every MAD routed through the port (ibsim counts its own traffic):
        # never less than what the collector read, and no more than the queries since could add.
        extended = perfquery(sim, lid[key[0]], key[1], extended=True)
        assert counters["port_xmit_data"] is None  # superseded by the 64-bit count
        for theirs, mine, unit in (("PortXmitData", "port_xmit_data_64", 4), ("PortRcvPkts", "port_rcv_packets_64", 1)):
            assert 0 <= extended[theirs] * unit - counters[mine] <= 400 * unit * 72, (key, mine)
    assert ours["leaf01", 1]["counters"]["symbol_error"] == 77


def test_a_switch_that_stops_answering_costs_its_values_and_an_error_not_the_sweep(ibsim):
    sim = ibsim()
    before = switch_ports(sweep(sim))
    os.write(sim.holder, b'Error "leaf02" 100\n')
    snap = sweep(sim, "--timeout", "100", "--retries", "1")
    after = switch_ports(snap)
    assert {key[0] for key in after} == {"leaf01", "spine01"}
    assert {key for key in before if key[0] != "leaf02"} == set(after)
    errors = [f"{e['path']}: {e['reason']}" for e in snap["errors"]]
    assert errors and all("NodeInfo beyond" in e and "no answer (timeout) after 2 tries" in e for e in errors)
    assert all("spine01" in e for e in errors)  # the ports facing leaf02, each named
    facing = [key for key, port in after.items() if port["phys_state"] == 5 and port["far"] is None]
    assert facing and all(key[0] == "spine01" for key in facing)  # up, and nothing answered beyond them
    assert snap["sweep"]["duration_s"] < 5
    os.write(sim.holder, b'Error "leaf02" 0\n')
    assert {key[0] for key in switch_ports(sweep(sim))} == {"leaf01", "leaf02", "spine01"}


def test_an_unlinked_switch_port_reads_down_and_polling_and_stays_in_the_sweep(ibsim):
    sim = ibsim()
    os.write(sim.holder, b'Unlink "leaf01"[5]\n')  # (port 1 is the collector's own way in)
    port = switch_ports(sweep(sim))["leaf01", 5]
    assert (port["state"], port["phys_state"], port["far"]) == (1, 2, None)
    assert port["counters"] is not None  # a down port is still counted, not dropped


def test_a_counters_only_poll_reads_the_counters_of_every_switch_port_found(ibsim):
    sim = ibsim()
    snap = sweep(sim, "--mode", "counters")
    assert snap["mode"] == "counters" and snap["ports"]["rows"] == []
    assert len(snap["counters"]["rows"]) == 3 * 40


def test_without_a_management_datagram_device_it_says_what_to_check():
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run(
        [sys.executable, "-m", "collectors", "fabric"], env=env, capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and r.stdout == ""
    said = r.stderr.strip().splitlines()[-1]  # (libibumad warns first, in its own words)
    assert said.startswith("fabric: cannot open the management datagram device of the first channel adapter")
    assert "is the ib_umad module loaded, and is there an InfiniBand device?" in said
