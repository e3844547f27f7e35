"""Covers fabricweb/health/records/policyfile.py.

`make demo`'s faults, as its Makefile names them, each show their problem on the fabric the demo runs:
its hosts and the switch fabric under them (runfabric --fabric), each sweep showing what ibsim would."""

from __future__ import annotations

import re
import shlex

from fabricweb.health.models import Event
from fabricweb.health.records import policyfile
from fabricweb.inventory.models import Device, Node
from tests.demo_support import ROOT, demo_layout, make_variable
from tests.fabric.fabric_support import FabricWorld
from tests.health_db.health_db_fabric import open_events

START_ONLY = ("speed", "width", "miscable")  # built into fabric.net: ibsim cannot change them while it runs


def test_every_demo_fault_opens_its_problem_in_the_first_polls(each_db, tmp_path):
    faults = shlex.split(make_variable("DEMO_FAULTS"))
    layout = demo_layout()
    start = tuple(f for f in faults if f.split(":")[1].split("=")[0] in START_ONLY)
    nodes = int(make_variable("SIM_NODES"))
    policyfile.store(policyfile.parse((ROOT / "scripts/demo-policies.yaml").read_text()))
    # runfabric's simulator: seed 0, 40-port switches.
    world = FabricWorld(
        tmp_path / "sim", nodes=nodes, switch_ports=40, start_faults=start, follow=True, layout_faults=layout
    )
    world.sim.add_fault(*(f for f in faults if f not in start and f not in layout))
    world.polls(4)

    events = open_events()
    messages = {key: event.message for key, event in events.items()}
    # A 100 Gb/s port that came up at 40 Gb/s (a RoCE port: no cable in the IB fabric),
    # in Ethernet words, not mlx5's InfiniBand ones (4X QDR, 4X EDR).
    assert messages["degraded:cn033/mlx5_0/1"].startswith("cn033 mlx5_0/1: 100GbE trained at 40GbE: speed downgrade")
    # Host links name both ends, and what both ends support is what they should run at.
    assert re.match(
        r"cn002 mlx5_0/1 ↔ leaf\d+ port \d+: trained at 30 Gb/s \(12X SDR\), expected 120 Gb/s \(12X QDR\)",
        messages["degraded:cn002/mlx5_0/1"],
    )
    assert re.match(
        r"cn003 mlx5_1/1 ↔ leaf\d+ port \d+: trained at 10 Gb/s \(1X QDR\), expected 120 Gb/s \(12X QDR\)",
        messages["degraded:cn003/mlx5_1/1"],
    )
    assert messages["degraded:leaf01/switch/25"].startswith("leaf01 port 25 ↔ spine")
    assert "(DDR where QDR expected) — both ends support 12X QDR" in messages["degraded:leaf01/switch/25"]
    assert re.match(r"leaf02 port 3 ↔ cn\d+ mlx\d_\d/\d: \d+ symbol errors", messages["symbol_errors:leaf02/switch/3"])
    assert "flapping:cn006/mlx5_0/1" in events  # (info until it has bounced more than once in the hour)
    # Each fault's problem, and nothing else on the other nodes and switches (info advice aside).
    alarms = {key for key, event in events.items() if event.severity != "info"}
    assert alarms == {
        "degraded:cn002/mlx5_0/1",
        "degraded:cn033/mlx5_0/1",
        "degraded:cn003/mlx5_1/1",
        "down:cn005/mlx5_0/1",
        "down:cn006/mlx5_0/1",  # a flapping link is down for part of its cycle
        "symbol_errors:cn008/mlx5_1/1",
        "pcie:cn009/mlx5_0",
        "pcie:cn009/mlx5_1",
        "degraded:leaf01/switch/25",
        "symbol_errors:leaf02/switch/3",
    }
    # The demo's GPU server: its 8 GPUs and 8 cards stored for its node page's matrix, and nothing said of it.
    (dgx,) = (f.split(":")[0] for f in layout)
    assert len(Node.objects.get(name=dgx).gpus) == 8
    assert Device.objects.filter(node__name=dgx).count() == 8
    assert [key for key in events if f":{dgx}/" in key] == []


def test_it_opens_one_event_for_the_demos_flapping_link_at_every_poll(each_db, tmp_path):
    (flap,) = (f for f in shlex.split(make_variable("DEMO_FAULTS")) if f.endswith(":flap"))
    target = flap.rsplit(":", 1)[0]  # cn006/mlx5_0/1
    policyfile.store(policyfile.parse((ROOT / "scripts/demo-policies.yaml").read_text()))
    nodes = int(make_variable("SIM_NODES"))
    world = FabricWorld(tmp_path / "sim", nodes=nodes, switch_ports=40, follow=True, layout_faults=demo_layout())
    world.polls(2)
    world.sim.add_fault(flap)
    problems_open = []
    for _ in range(10):
        world.poll()
        on_it = {e.kind for key, e in open_events().items() if key.endswith(f":{target}") and e.severity != "info"}
        problems_open.append(sorted(on_it))
    assert all(len(kinds) <= 1 for kinds in problems_open), problems_open
    assert problems_open[-1] == ["flapping"]
    assert open_events()[f"flapping:{target}"].severity == "critical"
    (down,) = Event.objects.filter(key=f"down:{target}")  # the first drop, then carried on by the flapping event
    assert down.resolved_at is not None
    assert Event.objects.filter(key=f"flapping:{target}").count() == 1
