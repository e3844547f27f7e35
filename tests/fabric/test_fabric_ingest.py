"""Covers fabricweb/fabric/ingest.py, fabricweb/fabric/topology.py.

Fabric ingest and judgement from both ends, on both databases: a simulated fabric (hosts and their
switches, collectors.sim --fabric) ingested poll by poll, host snapshots and fabric sweeps together.

Each fault opens exactly its own problem, naming both ends, within one sweep, and resolves once it
is gone; a clean fabric opens none.
"""

from __future__ import annotations

import pytest

from fabricweb.fabric.models import FabricNode, Link, Sweep, TopologyChange
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from tests.fabric.fabric_support import FabricWorld


def alarms() -> dict[str, Event]:
    return {e.key: e for e in Event.objects.filter(resolved_at__isnull=True).exclude(severity="info")}


def switch_port(switch: str, number: int) -> Port:
    return Port.objects.get(device__node__name=switch, device__name="switch", number=number)


def host_port(node: str, device: str, number: int) -> Port:
    return Port.objects.get(device__node__name=node, device__name=device, number=number)


@pytest.fixture
def world(each_db, tmp_path):
    def make(**options) -> FabricWorld:
        return FabricWorld(tmp_path / "sim", **options)

    return make


def test_a_clean_fabric_names_both_ends_of_every_link_and_opens_no_problem(world):
    w = world()
    w.polls(3)
    assert alarms() == {}
    switches = set(Node.objects.filter(kind=Node.Kind.SWITCH).values_list("name", flat=True))
    assert switches == {"leaf01", "leaf02", "spine01"}
    assert Node.objects.get(name="fabric-test").kind == Node.Kind.COLLECTOR
    assert sorted(FabricNode.objects.filter(node__isnull=False).values_list("lid", flat=True)) == [10, 11, 12]
    links = Link.objects.filter(gone_at__isnull=True)
    assert links.count() == len(w.builder.links()) == 22  # 10 host ports, 2 leaves x 6 uplinks
    for link in links:
        assert link.capable_speed == "QDR" and link.capable_lanes == 12 and (link.speed, link.lanes) == ("QDR", 12)
    host = host_port("cn001", "mlx5_0", 1)
    leaf = host.peer
    assert (leaf.device.node.name, leaf.number) == ("leaf01", 1) and host.peer_label == "leaf01 port 1"
    assert leaf.peer == host and leaf.peer_label == "cn001 mlx5_0/1"
    assert host.link_owner and not leaf.link_owner  # the host's agent speaks for the link
    assert host.expected_source == "both ends support 12X QDR"
    assert TopologyChange.objects.count() == 0  # the first sweep is the baseline, not a change


def test_a_host_link_trained_at_1x_is_one_problem_naming_both_ends(world):
    w = world(start_faults=("cn001/mlx5_0/1:width=1X",))
    w.polls(2)
    assert list(alarms()) == ["degraded:cn001/mlx5_0/1"]
    event = alarms()["degraded:cn001/mlx5_0/1"]
    assert event.severity == "critical"
    assert event.message == (
        "cn001 mlx5_0/1 ↔ leaf01 port 1: trained at 10 Gb/s (1X QDR), expected 120 Gb/s (12X QDR): "
        "width downgrade (1X where 12X expected) — both ends support 12X QDR"
    )


def test_an_inter_switch_link_at_a_lower_speed_is_one_problem_on_the_end_that_speaks_for_it(world):
    w = world(start_faults=("leaf01/7:speed=DDR",))
    w.polls(2)
    ((key, event),) = alarms().items()
    assert key == "degraded:leaf01/switch/7"
    assert event.message.startswith("leaf01 port 7 ↔ spine01 port ")
    assert "trained at 60 Gb/s (12X DDR), expected 120 Gb/s (12X QDR): speed downgrade" in event.message
    assert event.message.endswith("— both ends support 12X QDR")


def test_a_link_below_what_both_ends_support_resolves_once_it_trains_at_their_best(world):
    w = world(start_faults=("leaf01/7:speed=DDR",))
    w.polls(2)
    assert list(alarms()) == ["degraded:leaf01/switch/7"]
    far = int(switch_port("leaf01", 7).peer_label.split()[-1])
    w.builder.link("leaf01", 7, "spine01", far, 12, "QDR")  # reseated: it trains at 12X QDR
    w.polls(3)
    assert alarms() == {}
    assert Event.objects.get(key="degraded:leaf01/switch/7").reason.startswith("clear for 3 polls")


def test_a_switch_port_unlinked_is_down_stays_known_and_resolves_when_relinked(world):
    w = world()
    w.polls(2)
    w.builder.down("leaf01", 7)
    w.poll()
    ((key, event),) = alarms().items()
    assert key == "down:leaf01/switch/7"
    assert event.message.startswith("leaf01 port 7 ↔ spine01 port ")
    assert "port down (DOWN, physical state Polling: no cable or the peer is off)" in event.message
    port = switch_port("leaf01", 7)
    assert (port.state_name, port.phys_state_name, port.up) == ("DOWN", "Polling", False)
    assert port.peer_label.startswith("spine01 port ")  # the far end it was cabled to, still named
    gone = TopologyChange.objects.get()
    assert (gone.kind, gone.label) == ("disappeared", "leaf01 port 7")
    w.builder.link("leaf01", 7, "spine01", int(port.peer_label.split()[-1]))
    w.polls(3)
    assert alarms() == {} and Event.objects.get(key=key).resolved_at is not None
    assert TopologyChange.objects.order_by("at").last().kind == "appeared"


def test_symbol_errors_rising_on_a_switch_port_name_both_ends(world):
    w = world()
    w.polls(2)
    w.builder.add("leaf01", 3, "symbol_error", 500)
    w.poll()
    ((key, event),) = alarms().items()
    assert key == "symbol_errors:leaf01/switch/3"
    assert event.message.startswith("leaf01 port 3 ↔ cn002 mlx")
    assert "500 symbol errors in 10 s (over 10 per poll)" in event.message


def test_a_switch_that_stops_answering_is_one_event_and_its_ports_are_not_judged(world):
    w = world()
    w.polls(2)
    w.builder.mute("leaf02")
    w.poll()
    ((key, event),) = alarms().items()
    assert key == "unreachable:leaf02" and event.severity == "critical"
    assert event.message.startswith("leaf02: switch not answering management datagrams: its link to spine01 port ")
    assert FabricNode.objects.get(node__name="leaf02").missing_since is not None
    w.builder.muted.clear()
    w.polls(3)
    assert alarms() == {}


def test_a_leaf_that_loses_power_names_the_switch(world):
    w = world()
    w.polls(2)
    for number in list(w.builder.nodes["leaf02"].ports):
        if number and w.builder.nodes["leaf02"].ports[number].peer:
            w.builder.down("leaf02", number)
    w.poll(hosts=False)
    ((key, event),) = alarms().items()  # one problem: the spine's ports that faced it are told in it, not apart
    assert key == "unreachable:leaf02"
    assert event.message.startswith("leaf02: switch unreachable: all 6 links to it are down (spine01 port ")
    assert event.message.endswith(
        ", and 5 more ports cabled to it are not reached at all: it lost power, or every cable at once"
    )
    assert event.details["links_down"] == 6


def test_a_standby_collectors_sweeps_are_recorded_not_applied_until_the_leader_goes_quiet(world):
    from datetime import timedelta

    from fabricweb.fabric.ingest import ingest_fabric

    w = world()
    w.poll()
    w.builder.collector = "fabric-b"  # the same fabric, seen from a second collector
    result = ingest_fabric(w.builder.snapshot(w.now), now=w.now)
    assert result.status == "standby" and "fabric-test leads" in result.note
    assert Sweep.objects.filter(applied=False).count() == 1
    later = w.now + timedelta(seconds=31)
    result = ingest_fabric(w.builder.snapshot(later), now=later)
    assert result.status == "stored"


def test_a_host_snapshot_naming_a_switch_never_writes_the_switchs_rows_the_switch_yields_the_name(world):
    from fabricweb.telemetry.ingest import ingest_batch

    w = world()
    w.poll()
    switch = switch_port("leaf01", 1).device.node
    snap = w.host_snapshots()[0]
    snap["host"] = "leaf01"
    result = ingest_batch([snap], now=w.now).results[0]
    assert result.status == "stored"  # a name conflict is a finding (test_fabric_switch_names.py), not a lock-out
    switch.refresh_from_db()
    assert switch.name == f"leaf01-{switch.guid[-4:]}" and switch.kind == Node.Kind.SWITCH
    assert not switch.devices.exclude(name="switch").exists()
    assert Node.objects.get(name="leaf01").kind == Node.Kind.HOST


def test_a_host_cabled_to_the_wrong_port_is_one_cabling_problem_naming_both_ends(world):
    from fabricweb.fabric.topology import import_topology

    w = world(start_faults=("cn001/mlx5_1/1:miscable",))
    w.poll()
    with open(w.expected_file, encoding="utf-8") as f:
        assert import_topology(f.read(), "fabric-expected.yaml") == 22
    w.poll()
    ((key, event),) = alarms().items()
    assert key == "cabling:leaf01/switch/2"
    assert event.message.startswith(
        "leaf01 port 2: cabled wrong: expected leaf01 port 2 ↔ cn001 mlx5_1/1; cn001 mlx5_1/1 is cabled to leaf02 port "
    )
    assert event.message.endswith("; leaf01 port 2 has no link")
    assert event.details["problem"] == "wrong port"


def test_a_counters_only_sweep_moves_counters_and_keeps_every_link(world):
    from fabricweb.fabric.ingest import ingest_fabric

    w = world()
    w.polls(2)
    w.sim.step(10)
    w.builder.add("leaf01", 3, "symbol_error", 500)
    snap = w.builder.snapshot(w.now)
    snap["mode"], snap["ports"]["rows"] = "counters", []
    ingest_fabric(snap, now=w.now)
    assert list(alarms()) == ["symbol_errors:leaf01/switch/3"]
    assert Link.objects.filter(gone_at__isnull=True).count() == 22
    port = switch_port("leaf01", 3)
    assert (port.state_name, port.speed, port.lanes, port.peer_label) == ("ACTIVE", "QDR", 12, "cn002 mlx4_0/1")
