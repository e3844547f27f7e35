"""Covers collectors/__main__.py, collectors/mads/netfile.py, collectors/link.py, collectors/sim/,
collectors/sim/cabling.py, collectors/sim/console.py, collectors/sim/layout.py; through them
collectors/sim/rendering.py, collectors/sim/roce.py, collectors/sim/simstate.py, collectors/sim/sriov.py,
collectors/sim/switchside.py, collectors/sim/traffic.py.

`simulate --fabric`: the switch fabric as ibsim's net file, coherent with the host trees (no ibsim run here)."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from collectors import read_host
from collectors.__main__ import main as cli
from collectors.link import Rate
from collectors.mads import netfile
from collectors.sim import Fabric, FaultError, SimError, SwitchOptions
from collectors.sim import cabling as cb
from collectors.sim import console as ibsim
from collectors.sim.layout import LayoutError, build


def tree_bytes(root):
    """Every file's bytes and every link's target under root."""
    out = {}
    for path in sorted(Path(root).rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file() and not rel.endswith(".simlock"):
            out[rel] = path.read_bytes()
    return out


def host_ports(fabric):
    """(port key, Port) of every port the reader finds under the trees."""
    out = {}
    for node in fabric.layout.nodes:
        snap = read_host(os.path.join(fabric.out, node.name), host=node.name, use_verbs=False)
        assert snap.errors == []
        for dev in snap.devices:
            for p in dev.ports:
                out[f"{node.name}/{dev.name}/{p.number}"] = (dev, p)
    return out


def test_every_port_has_a_gid_whose_port_guid_is_unique_without_fabric_mode(tmp_path):
    fabric = Fabric.create(str(tmp_path / "sim"), 30, ports=2, seed=4)
    ports = host_ports(fabric)
    guids = [p.port_guid for _, p in ports.values()]
    assert None not in guids and len(set(guids)) == len(guids)
    for dev, p in ports.values():
        if p.link_layer == "InfiniBand":  # the node GUID + the port number, as ibsim gives a CA's ports
            assert int(p.port_guid, 16) == int(dev.node_guid.replace(":", ""), 16) + p.number
        else:  # RoCE: the link-local address of the port's MAC (modified EUI-64)
            assert p.port_guid[8:12] == "fffe"


# -- the files and their coherence with the trees ------------------------------------------------

HEALTHY = Rate(120.0, 12, "QDR")  # w=8 s=4: the best link ibsim's ports train


def make(base, nodes=6, seed=3, name="sim", **switches):
    return Fabric.create(str(base / name), nodes, seed=seed, switches=SwitchOptions(**switches))


def net(fabric):
    return netfile.parse((Path(fabric.out) / "fabric.net").read_text())


def expected_links(fabric):
    """fabric-expected.yaml as (switch, port, far end) triples, checked line by line."""
    lines = (Path(fabric.out) / "fabric-expected.yaml").read_text().splitlines()
    assert lines[:2] == [
        "# expected cabling of the simulated fabric (python -m collectors simulate --fabric)",
        "links:",
    ]
    out = []
    for line in lines[2:]:
        m = re.fullmatch(r"  - (\S+) port (\d+) -- (\S+(?: port \d+| \S+/\d+))", line)
        assert m, line
        out.append((m.group(1), int(m.group(2)), m.group(3)))
    return out


def test_fabric_net_describes_every_infiniband_host_port_and_the_switches(tmp_path):
    fabric = make(tmp_path)
    parsed = net(fabric)
    first = next(iter(parsed.nodes.values()))
    assert (first.kind, first.id) == ("ca", "cn001 mlx5_0")  # where ibsim attaches its clients
    switches = {n.id: n for n in parsed.nodes.values() if n.kind == "switch"}
    assert sorted(switches) == ["leaf01", "leaf02", "spine01"]
    assert switches["leaf01"].description == "MF0;leaf01:MQM8790-HS2F/U1"
    assert {n.num_ports for n in switches.values()} == {40}
    assert all(hex(n.guid).startswith("0xb8599f") for n in switches.values())
    cas = {n.id: n for n in parsed.nodes.values() if n.kind == "ca"}
    for key, (dev, p) in host_ports(fabric).items():
        ident = f"{key.split('/')[0]} {dev.name}"
        if p.link_layer == "Ethernet":
            assert ident not in cas  # RoCE ports are not on the InfiniBand fabric
            continue
        ca = cas[ident]
        assert ca.description == dev.node_desc == ident
        assert ca.guid == int(dev.node_guid.replace(":", ""), 16)
        assert int(p.port_guid, 16) == ca.guid + p.number  # what ibsim gives the port, the tree says
        assert p.rate == HEALTHY
        link = ca.ports[p.number]
        assert link.options == {"w": 8, "s": 4}
        back = parsed.nodes[link.remote_id].ports[link.remote_port]
        assert (back.remote_id, back.remote_port, back.options) == (ident, p.number, {"w": 8, "s": 4})


def test_the_expected_yaml_is_the_cabling_with_hosts_low_and_uplinks_top(tmp_path):
    fabric = make(tmp_path)
    links = expected_links(fabric)
    in_net = {(a.id, port, b.id, remote) for a, port, b, remote in net(fabric).links()}
    for switch, port, far in links:
        if " port " in far:
            far_id, far_port = far.split(" port ")
        else:
            far_id, far_port = far.rsplit("/", 1)
            far_id = far_id.replace("/", " ")
        assert (switch, port, far_id, int(far_port)) in in_net or (far_id, int(far_port), switch, port) in in_net
    assert len(links) == len(in_net)
    hosts = [(s, p) for s, p, far in links if not far.startswith(("leaf", "spine"))]
    uplinks = [(s, p, far) for s, p, far in links if far.startswith("spine")]
    assert [p for s, p in hosts if s == "leaf01"] == [1, 2, 3, 4, 5]  # 10 IB ports over 2 leaves
    assert [p for s, p, _ in uplinks if s == "leaf01"] == list(range(21, 41))
    assert uplinks[0] == ("leaf01", 21, "spine01 port 1")
    assert uplinks[-1] == ("leaf02", 40, "spine01 port 40")
    assert ("leaf01", 1) in hosts and links[0][2] == "cn001 mlx5_0/1"


@pytest.mark.parametrize(
    ("nodes", "ports", "leaves", "spines"),
    [(6, 40, 2, 1), (6, 8, 3, 2), (6, 7, 4, 3), (80, 40, 8, 4), (300, 40, 29, 15), (30, 36, 4, 2)],
)
def test_default_sizes_put_half_of_each_leaf_on_hosts_and_spread_uplinks_evenly(tmp_path, nodes, ports, leaves, spines):
    layout = build(1, nodes)
    cabling = cb.build(layout, ports)
    names = list(cabling.switches)
    assert len([n for n in names if n.startswith("leaf")]) == leaves
    assert len([n for n in names if n.startswith("spine")]) == spines
    per_switch = Counter()
    for link in cabling.links:
        per_switch[link.switch_end.node] += 1
        per_switch[link.far_end.node] += 1
    spine_load = [per_switch[n] for n in names if n.startswith("spine")]
    assert max(spine_load) <= ports and max(spine_load) - min(spine_load) <= 1
    for leaf in (n for n in names if n.startswith("leaf")):
        up = [x.switch_end.port for x in cabling.links if x.switch_end.node == leaf and x.far_end.node in names]
        assert up == list(range(ports // 2 + 1, ports + 1))  # the top half
        down = [x.switch_end.port for x in cabling.links if x.switch_end.node == leaf and x.far_end.node not in names]
        assert len(down) <= ports // 2 and down == list(range(1, len(down) + 1))
    digits = len(names[0]) - len("leaf")
    assert digits == max(2, len(str(leaves)))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"leaves": 1}, "need at least 2 leaves"),
        ({"switch_ports": 8, "spines": 1}, "need at least 2 spines"),
        ({"switch_ports": 1}, "between 2 and"),
    ],
)
def test_sizes_that_cannot_cable_the_hosts_are_clear_errors(tmp_path, options, message):
    with pytest.raises(LayoutError, match=message):
        make(tmp_path, **options)
    assert not (tmp_path / "sim" / "fabric.net").exists()


def test_the_same_seed_gives_the_same_fabric_and_another_seed_other_switch_guids(tmp_path):
    a, b = make(tmp_path, name="a"), make(tmp_path, name="b")
    for f in (a, b):
        f.add_fault("leaf01/3:flap", "leaf02/21:symbol-errors=2/s")
        for _ in range(3):
            f.step(10)
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    c = make(tmp_path, name="c", seed=4)
    guids = {n.id: n.guid for n in net(a).nodes.values()}
    assert all(guids[n.id] != n.guid for n in net(c).nodes.values() if n.kind == "switch")


# -- faults built into fabric.net at start --------------------------------------------------------


def test_a_miscabled_port_is_cabled_to_a_free_port_of_another_leaf_and_expected_where_it_should_be(tmp_path):
    fabric = make(tmp_path, faults=("cn001/mlx5_0/1:miscable",))
    assert expected_links(fabric)[0] == ("leaf01", 1, "cn001 mlx5_0/1")
    ca = net(fabric).nodes["cn001 mlx5_0"]
    assert (ca.ports[1].remote_id, ca.ports[1].remote_port) == ("leaf02", 6)  # leaf02 has hosts on 1-5
    assert 1 not in net(fabric).nodes["leaf01"].ports  # the port it should be on is empty
    _, p = host_ports(fabric)["cn001/mlx5_0/1"]
    assert p.rate == HEALTHY  # a miscabled link still trains
    assert fabric.faults() == ["cn001/mlx5_0/1:miscable"]


def test_speed_and_width_at_start_set_both_ends_in_fabric_net_and_the_host_rate(tmp_path):
    fabric = make(tmp_path, faults=("cn001/mlx5_0/1:speed=sdr", "cn001/mlx5_1/1:width=4X", "leaf01/21:speed=DDR"))
    nodes = net(fabric).nodes
    assert nodes["cn001 mlx5_0"].ports[1].options == nodes["leaf01"].ports[1].options == {"w": 8, "s": 1}
    assert nodes["cn001 mlx5_1"].ports[1].options == nodes["leaf01"].ports[2].options == {"w": 2, "s": 4}
    assert nodes["leaf01"].ports[21].options == nodes["spine01"].ports[1].options == {"w": 8, "s": 2}
    assert nodes["leaf01"].ports[22].options == {"w": 8, "s": 4}
    ports = host_ports(fabric)
    assert ports["cn001/mlx5_0/1"][1].rate == Rate(30.0, 12, "SDR")
    assert ports["cn001/mlx5_1/1"][1].rate == Rate(40.0, 4, "QDR")
    fabric.step(10)
    assert host_ports(fabric)["cn001/mlx5_0/1"][1].rate == Rate(30.0, 12, "SDR")  # it stays


def test_a_link_trains_at_the_lower_of_what_its_two_ends_were_set_to(tmp_path):
    fabric = make(tmp_path, faults=("cn001:speed=DDR", "leaf01/1:speed=SDR", "leaf01/2:width=1X"))
    nodes = net(fabric).nodes
    assert nodes["leaf01"].ports[1].options == {"w": 8, "s": 1}
    assert nodes["leaf01"].ports[2].options == {"w": 1, "s": 2}
    assert host_ports(fabric)["cn001/mlx5_1/1"][1].rate == Rate(5.0, 1, "DDR")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cn001/mlx5_0/1:speed=FDR", "ibsim simulates SDR, DDR, QDR links only"),
        ("leaf01/21:speed=HDR", "ibsim simulates SDR, DDR, QDR links only"),
        ("cn001/mlx5_0/1:width=2X", "1X, 4X, 8X and 12X links only"),
        ("cn001/mlx5_0:miscable", "one InfiniBand host port"),
        ("cn005/mlx5_0/1:miscable", "one InfiniBand host port"),  # cn005 is RoCE (seed 3)
        ("leaf09/1:speed=SDR", "no node 'leaf09'"),
    ],
)
def test_what_ibsim_cannot_build_is_a_clear_error_at_start(tmp_path, spec, message):
    assert build(3, 6).nodes[4].kind == "roce"
    with pytest.raises(FaultError, match=message):
        make(tmp_path, faults=(spec,))


def test_a_running_fabric_refuses_to_change_a_links_width_speed_or_cabling(tmp_path, capsys):
    fabric = make(tmp_path, faults=("cn001/mlx5_0/1:speed=SDR",))
    for spec in ("cn004/mlx4_0/1:speed=SDR", "leaf01/21:width=1X", "cn003/mlx5_0/1:miscable"):
        with pytest.raises(FaultError, match=r"ibsim cannot change .* while it runs"):
            fabric.add_fault(spec)
    with pytest.raises(FaultError, match=r"built into fabric\.net"):
        fabric.remove_fault("cn001/mlx5_0/1:speed")
    assert cli(["fault", "--out", fabric.out, "add", "cn004/mlx4_0/1:speed=SDR"]) == 2
    assert "ibsim cannot change a link's width or speed while it runs" in capsys.readouterr().err
    fabric.add_fault("cn002:down")
    assert fabric.clear_faults() == ["cn001/mlx5_0/1:speed=SDR"]  # clear leaves what fabric.net is built with
    assert fabric.faults() == ["cn001/mlx5_0/1:speed=SDR"]


# -- switch faults --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("leaf01/41:down", "leaf01 has ports 1 to 40"),
        ("leaf01/3:vanish", "not a switch fault"),
        ("leaf01:reset", "not a switch fault"),
        ("leaf01/3:mute", "mute silences a whole switch"),
        ("cn001:mute", "mute is a switch fault"),
        ("cn001/1:down", "NODE/DEVICE/PORT"),
        ("spine02:down", "switches: leaf01..leaf02, spine01"),
    ],
)
def test_a_bad_switch_fault_is_a_clear_error(tmp_path, spec, message):
    fabric = make(tmp_path)
    with pytest.raises(FaultError, match=message):
        fabric.add_fault(spec)


def test_switch_faults_need_fabric_mode(tmp_path):
    fabric = Fabric.create(str(tmp_path / "sim"), 6, seed=3)
    with pytest.raises(FaultError, match="no node 'leaf01'"):
        fabric.add_fault("leaf01/3:down")
    with pytest.raises(FaultError, match="--fabric"):
        fabric.add_fault("cn001/mlx5_0/1:miscable")
    assert not (tmp_path / "sim" / "fabric.net").exists()


def on(fabric, switch_port):
    """The host port cabled to a leaf port."""
    return fabric.cabling.by_end[switch_port].far_end.key


def state_of(fabric, key):
    _, p = host_ports(fabric)[key]
    return p.state.name, p.phys_state.name


def test_a_switch_down_takes_down_the_host_ports_cabled_to_it_and_a_pulled_cable_both_ends(tmp_path):
    fabric = make(tmp_path)
    on_leaf01 = {on(fabric, f"leaf01/{n}") for n in range(1, 6)}
    fabric.add_fault("leaf01:down")
    fabric.step(10)
    ports = host_ports(fabric)
    for key, (_, p) in ports.items():
        if p.link_layer == "InfiniBand":
            want = ("DOWN", "Polling") if key in on_leaf01 else ("ACTIVE", "LinkUp")
            assert (p.state.name, p.phys_state.name) == want, key
    assert ports["cn001/mlx5_0/1"][1].counters["link_downed"] == 1
    assert fabric._wanted.switches_down == {"leaf01"}
    fabric.clear_faults()
    fabric.add_fault("leaf02/4:down", "spine01:down")
    fabric.step(10)
    assert state_of(fabric, "cn001/mlx5_0/1") == ("ACTIVE", "LinkUp")
    assert state_of(fabric, on(fabric, "leaf02/4")) == ("DOWN", "Polling")
    assert state_of(fabric, on(fabric, "leaf02/5")) == ("ACTIVE", "LinkUp")  # a spine down leaves the hosts up


def test_a_flapping_switch_port_flaps_the_host_end_and_host_faults_break_the_cable_in_ibsim(tmp_path):
    fabric = make(tmp_path)
    fabric.add_fault("leaf01/3:flap", "cn004/mlx4_0/2:disabled", "cn003:vanish")
    seen = []
    for _ in range(4):
        fabric.step(10)
        seen.append((state_of(fabric, on(fabric, "leaf01/3"))[0], sorted(fabric._wanted.links_down)))
    vanished_and_disabled = ["leaf01/5", "leaf02/1", "leaf02/3"]  # cn003's two HCAs, cn004's port 2
    assert seen == [("DOWN", ["leaf01/3", *vanished_and_disabled]), ("ACTIVE", vanished_and_disabled)] * 2
    fabric.clear_faults()
    fabric.step(10)
    assert fabric._wanted.links_down == set()


def test_switch_port_symbol_errors_accumulate_only_while_the_link_is_up(tmp_path):
    fabric = make(tmp_path)
    fabric.add_fault("leaf02/21:symbol-errors=3/s", "spine01/1:symbol-errors=1/min")
    for _ in range(3):
        fabric.step(10)
    assert fabric._wanted.symbol_errors == {"leaf02/21": 90, "spine01/1": 0}
    fabric.add_fault("leaf02/21:down")
    fabric.step(10)
    fabric.step(50)
    assert fabric._wanted.symbol_errors == {"leaf02/21": 90, "spine01/1": 1}


# -- ibsim's console commands ---------------------------------------------------------------------


def wanted(switches_down=(), links_down=(), muted=(), symbol_errors=None):
    return ibsim.Wanted(set(switches_down), set(links_down), set(muted), dict(symbol_errors or {}))


def test_console_commands_take_ibsim_from_what_was_applied_to_what_is_wanted(tmp_path):
    cabling = make(tmp_path).cabling
    nothing = ibsim.empty_applied()
    assert ibsim.commands(cabling, nothing, wanted()) == []
    leaf02 = [x.key for x in cabling.links_of("leaf02")]  # a switch down takes all its links down
    want = wanted(["leaf02"], ["leaf01/3", "leaf01/21", *leaf02], ["spine01"], {"leaf01/4": 7})
    assert ibsim.commands(cabling, nothing, want) == [
        'Unlink "leaf02"',
        'Unlink "leaf01"[3]',
        'Unlink "leaf01"[21]',
        'Error "spine01" 100',
        'PerformanceSet "leaf01"[4] PortCounters.SymbolErrorCounter=7',
    ]
    applied = ibsim.applied_state(want)
    assert ibsim.commands(cabling, applied, want) == []  # nothing twice
    # leaf02 back: ReLink restores every link it had, so one still wanted down goes down again.
    back = wanted([], ["leaf01/3", "leaf01/21", "leaf02/21"], [], {"leaf01/4": 70000})
    assert ibsim.commands(cabling, applied, back) == [
        'ReLink "leaf02"',
        'Unlink "leaf02"[21]',
        'Error "spine01" 0',
        'PerformanceSet "leaf01"[4] PortCounters.SymbolErrorCounter=65535',  # 16 bits: it stops at all-ones
    ]
    assert ibsim.commands(cabling, ibsim.applied_state(back), wanted()) == [
        'ReLink "leaf01"[3]',
        'ReLink "leaf01"[21]',
        'ReLink "leaf02"[21]',
    ]


def test_a_spine_going_down_while_a_leaf_comes_back_keeps_their_links_down(tmp_path):
    cabling = make(tmp_path).cabling
    applied = ibsim.applied_state(wanted(["leaf01"], [x.key for x in cabling.links_of("leaf01")]))
    spine_links = {x.key for x in cabling.links_of("spine01")}
    cmds = ibsim.commands(cabling, applied, wanted(["spine01"], spine_links))
    assert cmds == ['ReLink "leaf01"', 'Unlink "spine01"']


def test_the_simulator_sends_only_what_changed_and_keeps_it_across_restarts(tmp_path):
    fifo = str(tmp_path / "ctl")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fabric = make(tmp_path)
        fabric.use_console(fifo)
        fabric.add_fault("leaf01/3:down", "leaf02/21:symbol-errors=1/s")
        fabric.step(10)
        assert read_fifo(reader) == [
            'Unlink "leaf01"[3]',
            'PerformanceSet "leaf02"[21] PortCounters.SymbolErrorCounter=10',
        ]
        again = Fabric.load(fabric.out)  # a restarted simulator
        again.use_console(fifo)
        again.render()
        assert read_fifo(reader) == []
        again.remove_fault("leaf01/3:down")
        again.step(5)
        assert read_fifo(reader) == [
            'ReLink "leaf01"[3]',
            'PerformanceSet "leaf02"[21] PortCounters.SymbolErrorCounter=15',
        ]
    finally:
        os.close(reader)


def test_with_nobody_reading_the_fifo_it_says_so_and_sends_the_commands_later(tmp_path):
    fifo = str(tmp_path / "ctl")
    os.mkfifo(fifo)
    fabric = make(tmp_path)
    fabric.use_console(fifo)
    fabric.add_fault("spine01:mute", "leaf01/3:down")
    fabric.step(10)  # no reader: not blocked, not applied
    assert "nobody reads" in fabric.console_warning
    assert fabric.state["switches"]["applied"]["muted"] == []
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fabric.step(10)
        assert read_fifo(reader) == ['Unlink "leaf01"[3]', 'Error "spine01" 100']
        assert fabric.console_warning is None
    finally:
        os.close(reader)
    fabric.step(10)  # ibsim stopped
    assert "stopped reading" in fabric.console_warning
    fabric.remove_fault("spine01:mute")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fabric.step(10)  # an ibsim started since knows only fabric.net: it gets what still holds
        assert read_fifo(reader) == ['Unlink "leaf01"[3]']
        assert fabric.console_warning is None
    finally:
        os.close(reader)


def test_ibsim_ctl_must_be_a_fifo_of_a_fabric_mode_simulator(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    fabric = make(tmp_path)
    with pytest.raises(SimError, match="not a FIFO"):
        fabric.use_console(str(tmp_path / "file"))
    plain = Fabric.create(str(tmp_path / "plain"), 4)
    with pytest.raises(SimError, match="--fabric"):
        plain.use_console(str(tmp_path / "file"))
    assert cli(["simulate", "--out", str(tmp_path / "x"), "--nodes", "4", "--once", "--leaves", "3"]) == 2
    assert "need --fabric" in capsys.readouterr().err


def read_fifo(fd):
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data.decode().splitlines()


# -- continuing a fabric, and the command line ----------------------------------------------------


def test_a_later_run_continues_the_same_fabric_and_refuses_to_rebuild_it(tmp_path, capsys):
    out = str(tmp_path / "cli")
    args = ["simulate", "--out", out, "--nodes", "6", "--seed", "3", "--once", "--fabric", "--switch-ports", "8"]
    assert cli([*args, "--fault", "cn001/mlx5_0/1:speed=DDR", "--fault", "leaf01/3:down"]) == 0
    net_before = (Path(out) / "fabric.net").read_bytes()
    assert cli([*args, "--fault", "cn001/mlx5_0/1:speed=DDR"]) == 0  # the same build: fine
    assert Fabric.load(out).steps == 2
    assert (Path(out) / "fabric.net").read_bytes() == net_before
    assert cli([*args, "--fault", "cn001/mlx5_0/1:speed=SDR"]) == 2
    assert "built without it" in capsys.readouterr().err
    assert cli([*args[:-2], "--switch-ports", "10"]) == 2
    assert "--fabric --switch-ports 8" in capsys.readouterr().err
    assert cli(args[:-3]) == 2  # without --fabric
    capsys.readouterr()
    assert cli(["fault", "--out", out, "list"]) == 0
    assert capsys.readouterr().out.split() == ["cn001/mlx5_0/1:speed=DDR", "leaf01/3:down"]
    assert cli([*args[:-3], "--fresh"]) == 0  # a new fabric without switches: no stale net file
    assert not (Path(out) / "fabric.net").exists() and not (Path(out) / "fabric-expected.yaml").exists()


def test_without_fabric_mode_nothing_of_the_switches_is_written(tmp_path):
    fabric = Fabric.create(str(tmp_path / "sim"), 6, seed=3)
    fabric.step(10)
    assert "switches" not in fabric.state and "switches" not in fabric.state["config"]
    assert sorted(os.listdir(fabric.out)) == sorted(
        [".simstate.json", ".simtmp", "faults.json", *(n.name for n in fabric.layout.nodes)]
    )
