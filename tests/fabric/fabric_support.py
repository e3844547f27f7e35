"""Fabric snapshots made from a net file, as the fabric collector would read that fabric: the stand-in at
the hardware edge for database-level tests (the real collector is tested against ibsim, tests/fabric/
test_fabric_ibsim.py). Links train as ibsim trains them: the widest width and fastest speed both ends
enable (`w=`/`s=` masks), every port supporting 1X-12X and SDR-QDR as ibsim's do.

    sweep = SweepBuilder(netfile.parse(open(sim_dir / "fabric.net").read()), collector="fabric-cn001")
    sweep.down("leaf01", 3)                        # both ends Down/Polling, no link
    sweep.add("leaf02", 7, "symbol_error", 500)    # a counter moves
    snap = sweep.snapshot(at)                      # the JSON the collector sends
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from collectors.mads import netfile
from collectors.mads.mad import NODE_TYPE_CA, NODE_TYPE_SWITCH
from collectors.mads.model import FabricNode, FabricPort, FabricSweep
from collectors.mads.pma import COUNTER_NAMES, SUPERSEDED
from collectors.mads.snapshot import to_dict

WIDTH_BITS = {1: 1, 2: 4, 4: 8, 8: 12}  # ibsim's w= mask -> lanes
SPEED_BITS = {1: "SDR", 2: "DDR", 4: "QDR"}
SUPPORTED_WIDTHS = frozenset({1, 2, 4, 8, 12})
SUPPORTED_SPEEDS = frozenset({"SDR", "DDR", "QDR"})
ACTIVE, DOWN, LINK_UP, POLLING = 4, 1, 5, 2


def _best(mask: int, table: dict) -> object:
    return table[max(bit for bit in table if mask & bit)]


class SweepBuilder:
    def __init__(self, net: netfile.NetFile, collector: str = "fabric-test") -> None:
        self.collector = collector
        self.nodes: dict[str, FabricNode] = {}  # by net id
        self.by_name: dict[str, FabricNode] = {}  # switches by name, CAs by "cn001 mlx5_0"
        self.muted: set[str] = set()
        self.counters: dict[tuple[str, int], dict[str, int]] = {}
        for node in net.nodes.values():
            switch = node.kind == "switch"
            fn = FabricNode(
                guid=node.guid,
                node_type=NODE_TYPE_SWITCH if switch else NODE_TYPE_CA,
                num_ports=node.num_ports,
                description=node.description,
                system_guid=node.guid,
                vendor_id=0x2C9,
                device_id=0xD2F0 if switch else 0x101B,
                revision=0,
            )
            numbers = range(node.num_ports + 1) if switch else node.ports
            for number in numbers:
                fn.ports[number] = FabricPort(number, port_guid=node.guid if switch else node.guid + number)
                if switch and number == 0:
                    fn.ports[0].lid, fn.ports[0].state, fn.ports[0].phys_state = len(self.nodes) + 1, ACTIVE, LINK_UP
                else:
                    self._down(fn.ports[number])
            self.nodes[node.id] = fn
            self.by_name[node.id] = fn
        for a, a_port, b, b_port in net.links():
            w = a.ports[a_port].options.get("w", 2) & b.ports[b_port].options.get("w", 2)
            s = a.ports[a_port].options.get("s", 1) & b.ports[b_port].options.get("s", 1)
            lanes, speed = _best(w, WIDTH_BITS), _best(s, SPEED_BITS)
            self.link(a.id, a_port, b.id, b_port, lanes, speed)

    def _down(self, port: FabricPort) -> None:
        port.state, port.phys_state, port.lanes, port.speed, port.peer = DOWN, POLLING, 4, "SDR", None
        port.width_enabled, port.width_supported = frozenset({4}), SUPPORTED_WIDTHS
        port.speed_enabled, port.speed_supported = frozenset({"SDR"}), SUPPORTED_SPEEDS

    def link(self, a: str, a_port: int, b: str, b_port: int, lanes: int = 12, speed: str = "QDR") -> None:
        """Cable a[a_port] to b[b_port], trained at lanes X speed (both ends ACTIVE/LinkUp)."""
        na, nb = self.nodes[a], self.nodes[b]
        for node, number, other, other_port in ((na, a_port, nb, b_port), (nb, b_port, na, a_port)):
            port = node.ports.setdefault(number, FabricPort(number, port_guid=node.guid + number))
            port.state, port.phys_state, port.lanes, port.speed = ACTIVE, LINK_UP, lanes, speed
            port.width_enabled, port.speed_enabled = frozenset({lanes}), frozenset({speed})
            port.peer = (other.guid, other_port)

    def follow(self, wanted, cabling) -> None:
        """Show what the simulator's switch side says (collectors.sim Fabric.switch_side): the links it has down
        (a switch down takes all its links), the mute switches, the switch ports' symbol errors."""
        for link in cabling.links:
            a, b = link.switch_end, link.far_end
            gone = link.key in wanted.links_down or a.node in wanted.switches_down or b.node in wanted.switches_down
            if gone:
                self.down(a.net_id, a.port)
            else:
                self.link(a.net_id, a.port, b.net_id, b.port, link.lanes, link.speed)
        self.muted = set(wanted.muted)
        for key, value in wanted.symbol_errors.items():
            switch, number = key.rsplit("/", 1)
            self.counters.setdefault((switch, int(number)), {})["symbol_error"] = value

    def down(self, node: str, number: int) -> None:
        """Pull the cable at node[number]: both ends Down/Polling."""
        port = self.nodes[node].ports[number]
        if port.peer is not None:
            peer_node = next(n for n in self.nodes.values() if n.guid == port.peer[0])
            self._down(peer_node.ports[port.peer[1]])
        self._down(port)

    def mute(self, switch: str) -> None:
        """The switch stops answering: it is not in the sweep, and the port facing it says why."""
        self.muted.add(switch)

    def add(self, node: str, number: int, counter: str, amount: int) -> None:
        counters = self.counters.setdefault((node, number), {})
        counters[counter] = counters.get(counter, 0) + amount

    def links(self) -> set[frozenset[tuple[int, int]]]:
        """Every cable up now, as the set of its two ends (node GUID, port)."""
        return {
            frozenset({(node.guid, number), port.peer})
            for node in self.nodes.values()
            for number, port in node.ports.items()
            if port.peer is not None
        }

    def reached(self) -> set[str]:
        """The nodes a sweep from the first channel adapter reaches: over links that are up, never through a
        mute switch (it does not answer, so nothing behind it is asked)."""
        by_guid = {n.guid: nid for nid, n in self.nodes.items()}
        start = next(nid for nid, n in self.nodes.items() if n.node_type == NODE_TYPE_CA)
        seen, todo = {start}, [start]
        while todo:
            for port in self.nodes[todo.pop()].ports.values():
                nid = by_guid.get(port.peer[0]) if port.peer else None
                if nid is not None and nid not in seen and nid not in self.muted:
                    seen.add(nid)
                    todo.append(nid)
        return seen

    def sweep(self, at: datetime) -> FabricSweep:
        """What a sweep reads now: only what it reaches; a port facing a mute switch names no peer."""
        muted = {self.nodes[s].guid for s in self.muted}
        reached = self.reached()
        nodes = []
        for nid, node in self.nodes.items():
            if nid not in reached:
                continue
            ports = {}
            for number, port in node.ports.items():
                port = replace(port, peer=None if port.peer and port.peer[0] in muted else port.peer)
                if node.node_type == NODE_TYPE_SWITCH and number > 0:
                    values = dict.fromkeys(COUNTER_NAMES, 0)
                    values.update(dict.fromkeys(SUPERSEDED))
                    values.update(self.counters.get((nid, number), {}))
                    port.counters = values
                ports[number] = port
            nodes.append(replace(node, ports=ports))
        return FabricSweep(self.collector, at.timestamp(), duration_s=0.5, mode="full", nodes=nodes, queries=1000)

    def snapshot(self, at: datetime) -> dict:
        return to_dict(self.sweep(at))


def one_leaf_net(ca_description: str, ca_guid: str) -> str:
    """An ibsim net: one leaf, and one channel adapter's port 1 cabled to its port 1 at 12X QDR (w=8 s=4, the best
    both ends support: no degraded link)."""
    return f"""
switchguid=0xb8599f0300000001
Switch 8 "leaf01" # "MF0;leaf01:MQM8790-HS2F/U1"
[1] "{ca_description}"[1] w=8 s=4

caguid={ca_guid}
Hca 1 "{ca_description}" # "{ca_description}"
[1] "leaf01"[1] w=8 s=4
"""


class FabricWorld:
    """A simulated fabric (collectors.sim, --fabric) ingested poll by poll through the real ingest paths:
    each poll steps the simulator, ingests every host's snapshot, then one fabric snapshot of its switches
    (SweepBuilder over the simulator's fabric.net, changed by the test between polls)."""

    def __init__(self, out, nodes: int = 6, switch_ports: int = 12, faults: tuple[str, ...] = (),
                 start_faults: tuple[str, ...] = (), collector: str = "fabric-test", follow: bool = False,
                 seed: int = 0, ports: int | None = None, hcas: int | None = None,
                 layout_faults: tuple[str, ...] = ()) -> None:  # fmt: skip
        from collectors.sim import Fabric
        from collectors.sim.simfabric import SwitchOptions

        self.out = str(out)
        switches = SwitchOptions(switch_ports=switch_ports, faults=tuple(start_faults))
        # ports, hcas: per HCA and per node, as `simulate --ports --hcas` (default: each model's own).
        self.sim = Fabric.create(
            self.out, nodes, ports, seed=seed, hcas=hcas, switches=switches, layout_faults=layout_faults
        )  # layout_faults: NODE:dgx, NODE:misbuilt, as runfabric passes them
        # follow: each sweep shows what the simulator's faults do to the switch side, as ibsim would.
        self.follow = follow
        if faults:
            self.sim.add_fault(*faults)
        self.nodes = [n.name for n in self.sim.layout.nodes]
        with open(os.path.join(self.out, "fabric.net"), encoding="utf-8") as f:
            self.builder = SweepBuilder(netfile.parse(f.read()), collector)
        self.expected_file = os.path.join(self.out, "fabric-expected.yaml")

    @property
    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.sim.clock)

    def host_snapshots(self) -> list[dict]:
        from collectors import read_host
        from collectors import to_dict as host_dict

        snaps = []
        for node in self.nodes:
            if os.path.isdir(os.path.join(self.out, node, "class")):
                tree = read_host(os.path.join(self.out, node), host=node, use_verbs=False, now=self.now.timestamp())
                snaps.append(host_dict(tree))
        return snaps

    def poll(self, hosts: bool = True, sweep: bool = True) -> None:
        from fabricweb.fabric.ingest import ingest_fabric
        from fabricweb.telemetry.ingest import ingest_batch

        self.sim.step(STEP)
        if self.follow:
            self.builder.follow(self.sim.switch_side, self.sim.cabling)
        if hosts:
            assert not ingest_batch(self.host_snapshots(), now=self.now).rejected
        if sweep:
            ingest_fabric(self.builder.snapshot(self.now), now=self.now)

    def polls(self, n: int, **kw) -> None:
        for _ in range(n):
            self.poll(**kw)


T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEP = 10.0


def polled_worlds(base) -> Callable[..., FabricWorld]:
    """What a `world` fixture returns: make(polls=2, **options) -> a FabricWorld under `base`, polled that
    often; by default 6 hosts on leaf01 and leaf02 (12 ports each: hosts on 1-6, uplinks to spine01 on 7-12)."""
    made: list[FabricWorld] = []

    def make(polls: int = 2, **options) -> FabricWorld:
        world = FabricWorld(base / f"sim{len(made)}", **{"nodes": 6, "switch_ports": 12, **options})
        made.append(world)
        world.polls(polls)
        return world

    return make
