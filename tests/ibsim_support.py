"""ibsim for the tests: a simulated fabric on its own IBSIM_SOCKNAME, its console on a FIFO, opensm sweeps,
and the diagnostic tools (iblinkinfo, perfquery) run against it; every process stops with the test."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from collectors.link import SPEEDS
from collectors.sim import Fabric
from harness import stop, wait_for

ROOT = Path(__file__).resolve().parents[1]
HAVE_IBSIM = all(shutil.which(tool) for tool in ("ibsim", "ibsim-run", "opensm", "iblinkinfo", "perfquery"))
needs_ibsim = pytest.mark.skipif(not HAVE_IBSIM, reason="needs ibsim-utils, opensm and infiniband-diags")


class Ibsim:
    """ibsim on DIR/fabric.net, its console on the FIFO DIR/fabric.net.ctl, and the tools run against it."""

    def __init__(self, fabric: Fabric, request) -> None:
        self.fabric = fabric
        out = Path(fabric.out)
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "IBSIM_SOCKNAME": f"fabricweb-test-{uuid.uuid4().hex[:12]}",
            "OSM_CACHE_DIR": str(out),
        }
        self.ctl = str(out / "fabric.net.ctl")
        os.mkfifo(self.ctl)
        # Our own write end keeps ibsim from reading end-of-file between the simulator's writes.
        self.holder = os.open(self.ctl, os.O_RDWR)
        request.addfinalizer(lambda: os.close(self.holder))
        self.log = out / "ibsim.log"
        stdin = os.open(self.ctl, os.O_RDONLY)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["ibsim", "-s", str(out / "fabric.net")],
                stdin=stdin,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        os.close(stdin)
        request.addfinalizer(lambda: stop(self.proc, 5))
        wait_for("ibsim to start", lambda: "Network simulator ready" in self.log.read_text())
        self.sweep()

    def run(self, *cmd: str) -> subprocess.CompletedProcess:
        # In the fabric's directory: umad2sim leaves a sys-<pid> directory of its own wherever its client runs.
        return subprocess.run(
            ["ibsim-run", *cmd], env=self.env, capture_output=True, text=True, timeout=60, cwd=self.fabric.out
        )

    def sweep(self) -> None:
        """One subnet manager sweep: LIDs, and ports from Initialize to Active."""
        r = self.run("opensm", "-o", "-f", str(Path(self.fabric.out) / "opensm.log"))
        assert r.returncode == 0, r.stdout + r.stderr

    def snapshot(self, routes: bool = True) -> dict:
        """One full sweep by the fabric collector, as the snapshot it sends (with the forwarding tables)."""
        script = (
            "import json; from collectors.mads.snapshot import to_dict; "
            "from collectors.mads.sweep import Sweeper, open_port\n"
            "with open_port() as port: print(json.dumps(to_dict(Sweeper(port, 'fabric-test').sweep(routes=ROUTES))))"
        ).replace("ROUTES", str(routes))
        r = self.run(sys.executable, "-c", script)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def tracert(self, source_lid: int, destination_lid: int) -> set[tuple[str, int]]:
        """The switch ports `ibtracert` walks from one LID to another: each hop's out port and next in port."""
        r = self.run("ibtracert", str(source_lid), str(destination_lid))
        assert r.returncode == 0, r.stdout + r.stderr
        ports, previous = set(), None
        for line in r.stdout.splitlines():
            start = re.match(r"From (ca|switch) \{(0x[0-9a-f]+)\}", line)
            if start:
                previous = (start.group(1), start.group(2))
            hop = re.match(r"\[(\d+)\] -> (ca|switch) port \{(0x[0-9a-f]+)\}\[(\d+)\]", line)
            if hop:
                out_port, kind, guid, in_port = hop.groups()
                if previous[0] == "switch":
                    ports.add((previous[1], int(out_port)))
                if kind == "switch":
                    ports.add((guid, int(in_port)))
                previous = (kind, guid)
        return ports

    def links(self) -> dict[tuple[str, int], dict]:
        r = self.run("iblinkinfo", "-l")
        assert r.returncode == 0, r.stderr
        return parse_iblinkinfo(r.stdout)


_LINE = re.compile(
    r'^(0x[0-9a-f]+) "\s*([^"]*)"\s+(\d+)\s+(\d+)\[\s*\] '
    # The link: width, per-lane signalling Gb/s (FDR10 prints QDR's 10.0 and says so), state and physical state.
    r"==\(\s*(?:(\d+X)\s+([\d.]+) Gbps(?: \((FDR10)\))?\s+)?(\w+)/\s*(\w+)\)==>\s+"
    # The far end and iblinkinfo's "(width_msg speed_msg)"; a port whose far end went away a moment ago ends
    # `"Port not available"`, a port down `[  ] "" ( )`.
    r'(?:(0x[0-9a-f]+)\s+(\d+)\s+(\d+)\[\s*\] "([^"]*)" \((.*)\)|\[\s*\] "" \((.*)\)|"Port not available")$'
)
_COULD = re.compile(r"^(?:Could be (\d+X))?\s*(?:Could be (.+))?$")


def short(description: str) -> str:
    """`MF0;leaf01:MQM8790-HS2F/U1` -> leaf01; a CA's description is its name already."""
    return description.split(";", 1)[1].split(":", 1)[0] if description.startswith("MF0;") else description


def parse_iblinkinfo(text: str) -> dict[tuple[str, int], dict]:
    """`iblinkinfo -l`: (node, port) -> guid, lid, width, per-lane Gb/s, state, phys state, far end, "Could be",
    and in collectors.link's names the speed and what iblinkinfo says the link could be (`could_lanes`, None
    when at its widest; `could_speed`, None when at its fastest)."""
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        assert m, line
        guid, desc, lid, port, width, gbps, fdr10, state, phys, _, _, far_port, far_desc, could, _ = m.groups()
        could = (could or "").strip()
        wants = _COULD.match(could)
        assert wants, could
        out[(short(desc), int(port))] = {
            "guid": guid,
            "lid": int(lid),
            "link": (width, gbps, state, phys),
            "speed": "FDR10" if fdr10 else (speed_of(gbps) if gbps else None),
            "far": (short(far_desc), int(far_port)) if far_port else None,
            "could": could,
            "could_lanes": int(wants.group(1)[:-1]) if wants.group(1) else None,
            "could_speed": _could_speed(wants.group(2)) if wants.group(2) else None,
        }
    return out


def speed_of(gbps: str) -> str:
    """iblinkinfo's per-lane signalling rate (`212.5`) as a speed's name; FDR10 says itself, never by its rate."""
    return next(s.name for s in SPEEDS if s.name != "FDR10" and s.signalling_gbps == float(gbps))


def _could_speed(text: str) -> str:
    # "FDR10 (Found link at QDR but expected speed is FDR10)", or a rate: "212.5 Gbps".
    return "FDR10" if text.startswith("FDR10") else speed_of(text.removesuffix(" Gbps"))


def host_lids(snap: dict) -> dict[str, list[int]]:
    """host -> its ports' LIDs, from a fabric snapshot (a CA is named by its description's first word)."""
    nodes = snap["nodes"]["rows"]
    out: dict[str, list[int]] = {}
    for row in snap["ports"]["rows"]:
        if nodes[row[0]][1] == 1 and row[3]:
            out.setdefault(nodes[row[0]][3].split()[0], []).append(row[3])
    return out


def traced(sim: Ibsim, lids: dict[str, list[int]], hosts: list[str]) -> set[tuple[str, int]]:
    """The switch ports ibtracert walks between every port of every two of `hosts`, both ways."""
    ports = set()
    for a in hosts:
        for b in hosts:
            if a != b:
                for src in lids[a]:
                    for dst in lids[b]:
                        ports |= sim.tracert(src, dst)
    return ports


def switch_ends(links, switch_guids: set[str]) -> set[tuple[str, int]]:
    """The switch ends (GUID, port) of these Link rows: what ibtracert's hops are compared by."""
    out = set()
    for link in links:
        out.update((g, p) for g, p in ((link.a_guid, link.a_port), (link.b_guid, link.b_port)) if g in switch_guids)
    return out
