"""The switch fabric under the simulated hosts (`simulate --fabric`): leaves and spines, which
port is cabled to which, what each link trains at, and the two files that describe it,
DIR/fabric.net (ibsim's net file) and DIR/fabric-expected.yaml (the cabling as it should be).

The cabling is a pure function of the layout and the fabric options (switch ports, leaves,
spines, the faults given at start), so the state stores those, never the cabling.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..mads import netfile
from . import faults as fl
from .layout import Layout, LayoutError, SimDevice, SimPort, guid_int, unit

NET_FILE = "fabric.net"
EXPECTED_FILE = "fabric-expected.yaml"
SWITCH_OUI = 0xB8599F  # NVIDIA (Mellanox) switches
SWITCH_MODEL = "MQM8790-HS2F"
DEFAULT_SWITCH_PORTS = 40
# The best link ibsim trains (w=8 s=4): its ports support 12X and QDR at most.
BEST_SPEED, BEST_LANES = "QDR", 12
# ibsim's w= and s= options: the IB LinkWidthEnabled and LinkSpeedEnabled masks.
WIDTH_MASK = {1: 1, 4: 2, 8: 4, 12: 8}
SPEED_MASK = {"SDR": 1, "DDR": 2, "QDR": 4}


@dataclass(frozen=True, slots=True)
class Switch:
    name: str  # leaf01, spine01
    guid: int
    ports: int

    @property
    def description(self) -> str:
        """The NodeDescription an NVIDIA switch answers with."""
        return f"MF0;{self.name}:{SWITCH_MODEL}/U1"


@dataclass(frozen=True, slots=True)
class End:
    """One end of a cable: a switch port, or an HCA port (node "cn001/mlx5_0")."""

    node: str
    port: int

    @property
    def key(self) -> str:  # "leaf01/3" or "cn001/mlx5_0/1", as fault specs name them
        return f"{self.node}/{self.port}"

    @property
    def net_id(self) -> str:  # the record's id in fabric.net: "leaf01", "cn001 mlx5_0"
        return self.node.replace("/", " ")


@dataclass(frozen=True, slots=True)
class Link:
    switch_end: End  # a leaf's on inter-switch links: console commands name this end
    far_end: End  # the HCA port, or the spine's
    speed: str = BEST_SPEED
    lanes: int = BEST_LANES

    @property
    def key(self) -> str:
        return self.switch_end.key

    @property
    def options(self) -> dict[str, int]:
        return {"w": WIDTH_MASK[self.lanes], "s": SPEED_MASK[self.speed]}


@dataclass(slots=True)
class Cabling:
    switches: dict[str, Switch]
    expected: list[Link]  # as fabric-expected.yaml says, without miscabling
    links: list[Link] = field(default_factory=list)  # as fabric.net cables them
    by_end: dict[str, Link] = field(default_factory=dict)  # either end's key -> its link

    def names(self) -> str:
        leaves = [n for n in self.switches if n.startswith("leaf")]
        spines = [n for n in self.switches if n.startswith("spine")]
        return ", ".join(f"{g[0]}..{g[-1]}" if len(g) > 1 else g[0] for g in (leaves, spines))

    def cable(self, links: list[Link]) -> None:
        self.links = links
        self.by_end = {end.key: link for link in links for end in (link.switch_end, link.far_end)}

    def links_of(self, switch: str) -> list[Link]:
        return [x for x in self.links if switch in (x.switch_end.node, x.far_end.node)]

    def net_text(self, layout: Layout) -> str:
        """fabric.net. The first record is cn001's first HCA, where ibsim attaches its clients."""
        net = netfile.NetFile()
        for node in layout.nodes:
            for dev in node.devices:
                if dev.model.link_layer == "InfiniBand":
                    ident = f"{node.name} {dev.name}"  # its node_desc
                    net.nodes[ident] = netfile.NetNode("ca", len(dev.ports), ident, ident, guid_int(dev.guid))
        for switch in self.switches.values():
            net.nodes[switch.name] = netfile.NetNode(
                "switch", switch.ports, switch.name, switch.description, switch.guid
            )
        for link in self.links:
            for here, there in ((link.switch_end, link.far_end), (link.far_end, link.switch_end)):
                net.nodes[here.net_id].ports[here.port] = netfile.NetPort(
                    here.port, there.net_id, there.port, options=link.options
                )
        return netfile.render(net)

    def expected_yaml(self) -> str:
        lines = ["# expected cabling of the simulated fabric (python -m collectors simulate --fabric)", "links:"]
        for link in self.expected:
            a, b = link.switch_end, link.far_end
            far = f"{b.node} port {b.port}" if b.node in self.switches else f"{b.net_id}/{b.port}"
            lines.append(f"  - {a.node} port {a.port} -- {far}")
        return "\n".join(lines) + "\n"


def build(
    layout: Layout,
    switch_ports: int = DEFAULT_SWITCH_PORTS,
    leaves: int | None = None,
    spines: int | None = None,
    start_faults: Iterable[str] = (),
) -> Cabling:
    """Leaves with hosts on their low ports and uplinks on their top ports, spread evenly over the
    spines; then the faults given at start (START_ONLY kinds): miscabled ports and slow links."""
    hosts = [(dev, port) for _, dev, port in layout.ports() if dev.model.link_layer == "InfiniBand"]
    n_leaves, n_spines, down = _size(len(hosts), switch_ports, leaves, spines)
    up = switch_ports - down
    base = int(unit(layout.seed, "switch-guid") * 0xFFFFFF)
    names = _names("leaf", n_leaves) + _names("spine", n_spines)
    switches = {
        name: Switch(name, (SWITCH_OUI << 40) | (0x0300 << 24) | ((base + i) & 0xFFFFFF), switch_ports)
        for i, name in enumerate(names)
    }
    leaf_names, spine_names = names[:n_leaves], names[n_leaves:]
    expected = []
    spine_next = dict.fromkeys(spine_names, 1)
    for k, leaf in enumerate(leaf_names):
        block = hosts[k * len(hosts) // n_leaves : (k + 1) * len(hosts) // n_leaves]
        for number, (dev, port) in enumerate(block, start=1):
            expected.append(Link(End(leaf, number), _hca_end(dev, port)))
        for j in range(up):
            # One round-robin over all uplinks, so every spine gets the same number, ±1.
            spine = spine_names[(k * up + j) % n_spines]
            expected.append(Link(End(leaf, down + 1 + j), End(spine, spine_next[spine])))
            spine_next[spine] += 1
    cabling = Cabling(switches, expected)
    cabling.cable(expected)
    checked = [fl.check(fl.parse(spec), layout, cabling, at_start=True) for spec in start_faults]
    if checked:
        links = _miscable(cabling, [f for f in checked if f.kind == "miscable"], down)
        cabling.cable([_trained(link, checked) for link in links])
    return cabling


def _size(hosts: int, ports: int, leaves: int | None, spines: int | None) -> tuple[int, int, int]:
    """(leaves, spines, host-facing ports per leaf): about half of a leaf's ports face hosts."""
    if not 2 <= ports <= netfile.MAX_PORTS:
        raise LayoutError(f"--switch-ports must be between 2 and {netfile.MAX_PORTS}")
    down = ports // 2
    up = ports - down
    need = max(2, math.ceil(hosts / down))
    if leaves is None:
        leaves = need
    elif leaves < need:
        raise LayoutError(f"{hosts} InfiniBand host ports need at least {need} leaves of {down} host ports")
    least = max(1, math.ceil(leaves * up / ports))
    if spines is None:
        spines = least
    elif spines < least:
        raise LayoutError(
            f"{leaves} leaves with {up} uplinks each need at least {least} spines of {ports} ports (--spines {spines})"
        )
    return leaves, spines, down


def _names(prefix: str, count: int) -> list[str]:
    digits = max(2, len(str(count)))
    return [f"{prefix}{i:0{digits}d}" for i in range(1, count + 1)]


def _hca_end(dev: SimDevice, port: SimPort) -> End:
    return End(dev.key, port.number)


def _miscable(cabling: Cabling, faults: list[fl.Fault], down: int) -> list[Link]:
    """Each miscabled host port moves to the lowest free host port of the next leaf that has one."""
    leaves = [s for s in cabling.switches if s.startswith("leaf")]
    used = {link.switch_end.key for link in cabling.expected}
    moved: dict[str, End] = {}
    for fault in sorted(faults, key=lambda f: f.target):
        link = cabling.by_end[fault.target]
        here = leaves.index(link.switch_end.node)
        free = (
            End(leaf, number)
            for leaf in leaves[here + 1 :] + leaves[:here]
            for number in range(1, down + 1)
            if f"{leaf}/{number}" not in used
        )
        target = next(free, None)
        if target is None:
            raise LayoutError(f"{fault.spec}: no free host port on another leaf (give more --leaves)")
        used.add(target.key)
        moved[link.key] = target
    return [Link(moved.get(x.key, x.switch_end), x.far_end) for x in cabling.expected]


def _trained(link: Link, start_faults: list[fl.Fault]) -> Link:
    """The link's speed and width: the lowest either end was set to, as a link trains."""
    active = list(enumerate(start_faults))
    ends = [fl.effects(active, end.key) for end in (link.switch_end, link.far_end)]
    speed = min((e.speed or BEST_SPEED for e in ends), key=list(SPEED_MASK).index)
    lanes = min(e.lanes or BEST_LANES for e in ends)
    return Link(link.switch_end, link.far_end, speed, lanes)
