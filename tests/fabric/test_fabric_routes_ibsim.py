"""Covers collectors/__main__.py.

The switches' forwarding tables as the fabric collector reads them, against `ibroute` on ibsim + opensm.

opensm programs every switch's linear forwarding table; `ibroute LID` reads one switch's table with
infiniband-diags. `python -m collectors fabric --routes` must print the same, byte for byte, and its
JSON must hold the same out port for every LID.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from collectors.sim import Fabric, SwitchOptions
from tests.ibsim_support import Ibsim, needs_ibsim

pytestmark = needs_ibsim


@pytest.fixture
def sim(tmp_path, request) -> Ibsim:
    # Three leaves under two spines: routes that go up, across and down, and spread over uplinks.
    options = SwitchOptions(switch_ports=12, leaves=3, spines=2)
    return Ibsim(Fabric.create(str(tmp_path / "sim"), 9, seed=5, switches=options), request)


def routes(sim: Ibsim, fmt: str) -> str:
    r = sim.run(sys.executable, "-m", "collectors", "fabric", "--routes", "--format", fmt)
    assert r.returncode == 0, r.stderr
    return r.stdout


def switch_lids(sim: Ibsim) -> list[int]:
    r = sim.run("ibswitches")
    assert r.returncode == 0, r.stderr
    return sorted(int(m) for m in re.findall(r" lid (\d+) ", r.stdout))


def test_its_text_is_what_ibroute_prints_for_every_switch(sim):
    lids = switch_lids(sim)
    assert len(lids) == 5
    theirs = ""
    for lid in lids:
        r = sim.run("ibroute", str(lid))
        assert r.returncode == 0, r.stderr
        theirs += r.stdout
    ours = routes(sim, "text")
    assert ours == theirs
    assert ours.count("valid lids dumped") == 5


def test_its_json_holds_the_out_port_of_every_lid_as_ibroute_reads_it(sim):
    tables = json.loads(routes(sim, "json"))["routes"]
    assert sorted(t["lid"] for t in tables) == switch_lids(sim)
    for table in tables:
        assert table["guid"].startswith("0x") and table["name"].startswith("MF0;")
        r = sim.run("ibroute", "-n", str(table["lid"]))
        entries = {int(lid, 16): int(port) for lid, port in re.findall(r"^(0x[0-9a-f]+) (\d+)", r.stdout, re.M)}
        assert len(entries) > 10
        ours = {lid: port for lid, port in enumerate(table["lft"]) if port != 255}
        assert ours == entries, table["name"]


# Three full sweeps by one Sweeper, as the fabric agent makes them: the tables come with the first, not with
# the second (nothing changed, the interval not yet over), and again once a cable is pulled.
SWEEPS = """
import json, sys, time
from collectors.mads.snapshot import to_dict
from collectors.mads.sweep import Sweeper, open_port
with open_port() as port:
    sweeper = Sweeper(port, "fabric-test", routes_interval=3600)
    for _ in range(3):
        print(json.dumps(to_dict(sweeper.sweep())), flush=True)
        sys.stdin.readline()
"""


def test_a_sweep_carries_the_tables_when_first_read_and_after_the_topology_changes(sim):
    proc = subprocess.Popen(
        ["ibsim-run", sys.executable, "-c", SWEEPS],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=sim.env, cwd=sim.fabric.out,
    )  # fmt: skip
    try:
        first = json.loads(proc.stdout.readline())
        proc.stdin.write("\n")
        proc.stdin.flush()
        second = json.loads(proc.stdout.readline())
        os.write(sim.holder, b'Unlink "leaf02"[1]\n')
        sim.sweep()
        proc.stdin.write("\n")
        proc.stdin.flush()
        third = json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert first["routes"]["columns"] == ["node", "lid", "lft"]
    nodes = first["nodes"]["rows"]
    assert sorted(nodes[row[0]][1] for row in first["routes"]["rows"]) == [2] * 5  # the five switches
    for _node, lid, lft in first["routes"]["rows"]:
        assert bytes.fromhex(lft)[lid] == 0  # a switch reaches its own LID through port 0, its management port
    assert "routes" not in second
    assert len(third["routes"]["rows"]) == 5
