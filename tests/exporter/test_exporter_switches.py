"""Covers collectors/mads/pma.py, fabricweb/exporter/collector.py, fabricweb/exporter/names.py,
fabricweb/exporter/selection.py, fabricweb/telemetry/storage/deltas.py.

/metrics on a fabric with switches (tests/fabric's FabricWorld: hosts and a fabric sweep ingested through
the real paths): switch ports in families of their own, link series naming both ends, a down port and an
unreachable switch kept, the sets, shards and node globs over switches, and prometheus_client's bytes."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from django.utils import timezone

from collectors.mads.pma import COUNTER_NAMES
from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.names import SWITCH_COUNTERS
from fabricweb.exporter.selection import Selection
from fabricweb.fabric.models import FabricNode
from fabricweb.inventory.models import Node
from fabricweb.telemetry.storage.deltas import all_ones
from tests.exporter.exporter_support import LiveWorld, assert_same_bytes, by_name, port, samples, scrape, switch_port

SWITCHES = ("leaf01", "leaf02", "spine01")
PORTS = 12  # per switch
HOSTS = {f"cn00{i}" for i in range(1, 7)}
# The families of a host's ports, devices and node: no switch or collector in any of them.
HOST_FAMILIES = (
    "infiniband_node_up",
    "infiniband_node_last_seen_timestamp_seconds",
    "infiniband_info",
    "infiniband_state_id",
    "infiniband_physical_state_id",
    "infiniband_rate_bytes_per_second",
    "infiniband_port_up",
    "infiniband_port_degraded",
    "infiniband_port_expected_up",
    "infiniband_events_open",
    "infiniband_symbol_error_total",
    "infiniband_port_data_received_bytes_total",
)

# A link's labels in words (infiniband_link_info, _degraded_info) beyond those of its series.
WORDS = ("speed", "width", "capable_speed", "capable_width")
# ?set=detail's link families: a link's info and rates (the default set's are up and degraded).
LINK_DETAIL = {
    "infiniband_link_info",
    "infiniband_link_rate_bytes_per_second",
    "infiniband_link_capable_rate_bytes_per_second",
}


@pytest.fixture
def world(tmp_path, each_db):
    """Six hosts on two leaves and a spine (12 ports each), two clean polls."""
    fabric = LiveWorld(tmp_path / "sim", polls=3)
    fabric.polls(2)
    return fabric


def guids() -> dict[str, str]:
    return dict(Node.objects.filter(kind=Node.Kind.SWITCH).values_list("name", "guid"))


def links(text: str, name: str = "infiniband_link_up") -> dict[str, tuple[dict, float]]:
    """end -> (labels, value) of a link family."""
    return {dict(k)["end"]: (dict(k), v) for k, v in by_name(text, name).items()}


def test_every_counter_the_fabric_collector_reads_has_its_switch_family():
    sources = [(field, file) for family in SWITCH_COUNTERS for field, file in family.sources]
    assert len(sources) == len(set(sources))
    assert {file for _, file in sources} == set(COUNTER_NAMES)
    # Stored as ingest stores them (fabricweb/fabric/ingest.py): the `_64` twins in counters_ext.
    assert all((field == "counters_ext") == file.endswith("_64") for field, file in sources)


def test_switch_ports_have_their_own_families_and_host_families_carry_hosts_only(client, world):
    text = scrape(client)
    ids = guids()
    for name in HOST_FAMILIES:
        nodes = {dict(k)["node"] for k in by_name(text, name)}
        assert nodes and nodes <= HOSTS, (name, nodes - HOSTS)
    for name in ("infiniband_switch_port_up", "infiniband_switch_port_state_id"):
        assert set(by_name(text, name)) == {switch_port(s, n, ids[s]) for s in SWITCHES for n in range(1, PORTS + 1)}, (
            name
        )
    # Every counter the switch's agent reads, as infiniband_exporter names it, on every port.
    for family in SWITCH_COUNTERS:
        assert len(by_name(text, family.name + "_total")) == len(SWITCHES) * PORTS, family.name
    lids = dict(FabricNode.objects.filter(node__isnull=False).values_list("node__name", "lid"))
    assert all(lids.values())
    assert by_name(text, "infiniband_switch_info") == {
        frozenset(
            {"guid": ids[s], "switch": s, "lid": str(lids[s]), "description": f"MF0;{s}:MQM8790-HS2F/U1"}.items()
        ): 1
        for s in SWITCHES
    }
    assert set(by_name(text, "infiniband_switch_up").values()) == {1.0}
    assert by_name(text, "infiniband_fabric_collector_up") == {frozenset({("collector", "fabric-test")}): 1}
    # A switch port at 12X QDR: 120 Gb/s in bytes per second, as infiniband_exporter's rate.
    up_port = switch_port("leaf01", 1, ids["leaf01"])
    assert by_name(text, "infiniband_switch_port_rate_bytes_per_second")[up_port] == 15e9
    # An unused port: down, no rate, its counters all the same.
    spare = switch_port("leaf01", 6, ids["leaf01"])
    assert by_name(text, "infiniband_switch_port_up")[spare] == 0
    assert spare not in by_name(text, "infiniband_switch_port_rate_bytes_per_second")
    assert spare in by_name(text, "infiniband_switch_port_symbol_error_total")


def test_each_cable_is_one_link_series_naming_both_ends(client, world):
    detail = scrape(client, set="detail")
    info = links(detail, "infiniband_link_info")
    # Every cable in ?set=detail: hosts on the fabric speak for their links (cn006 is not cabled to it);
    # inter-switch links, the first switch by name.
    host_links = {end for end, (labels, _) in info.items() if labels["type"] == "host"}
    assert len(host_links) == 10 and all(end.startswith("cn00") for end in host_links)
    labels, _ = info["cn001 mlx5_0/1"]
    assert {k: v for k, v in labels.items() if k not in WORDS} == {
        "end": "cn001 mlx5_0/1",
        "node": "cn001",
        "device": "mlx5_0",
        "port": "1",
        "peer": "leaf01 port 1",
        "peer_node": "leaf01",
        "type": "host",
    }
    isl = {end: labels["peer"] for end, (labels, _) in info.items() if labels["type"] == "inter-switch"}
    assert len(isl) == 12 and isl["leaf01 port 7"] == "spine01 port 1" and isl["leaf02 port 12"] == "spine01 port 12"
    assert info["leaf01 port 7"][0]["device"] == ""
    # No link twice, from its other end.
    assert not {end for end in info if end.startswith("spine01")}
    rates = links(detail, "infiniband_link_rate_bytes_per_second")
    capable = links(detail, "infiniband_link_capable_rate_bytes_per_second")
    assert rates["leaf01 port 7"][1] == capable["leaf01 port 7"][1] == 15e9
    assert rates["cn001 mlx5_0/1"][1] == capable["cn001 mlx5_0/1"][1] == 15e9

    # The default set: the cables a switch port speaks for, labelled as in detail; a host's own link is its
    # port's series (up, degraded, rate, expected rate), none of the link's.
    text = scrape(client)
    up = links(text)
    assert set(up) == set(isl)
    assert up["leaf01 port 7"] == ({k: v for k, v in info["leaf01 port 7"][0].items() if k not in WORDS}, 1)
    assert set(v for _, v in links(text, "infiniband_link_degraded").values()) == {0.0}
    assert not links(text, "infiniband_link_degraded_info")
    assert by_name(text, "infiniband_port_up")[port("cn001", "mlx5_0", 1)] == 1
    assert by_name(text, "infiniband_rate_bytes_per_second")[port("cn001", "mlx5_0", 1)] == 15e9


def test_a_down_switch_port_keeps_its_series_and_its_link_says_down(client, world):
    before = by_name(scrape(client), "infiniband_switch_port_link_downed_total")
    world.builder.down("leaf01", 7)  # the cable to spine01 port 1
    world.builder.add("leaf01", 7, "link_downed", 1)
    world.poll()
    text = scrape(client)
    ids = guids()
    for switch, number in (("leaf01", 7), ("spine01", 1)):
        port = switch_port(switch, number, ids[switch])
        assert by_name(text, "infiniband_switch_port_up")[port] == 0
        assert by_name(text, "infiniband_switch_port_state_id")[port] == 1  # DOWN
        assert by_name(text, "infiniband_switch_port_physical_state_id")[port] == 2  # Polling
        assert port not in by_name(text, "infiniband_switch_port_rate_bytes_per_second")
        assert port in by_name(text, "infiniband_switch_port_transmit_data_bytes_total")
    leaf_port = switch_port("leaf01", 7, ids["leaf01"])
    assert by_name(text, "infiniband_switch_port_link_downed_total")[leaf_port] == before[leaf_port] + 1
    labels, value = links(text)["leaf01 port 7"]
    assert (value, labels["peer"], labels["type"]) == (0, "spine01 port 1", "inter-switch")
    detail = scrape(client, set="detail")
    assert "leaf01 port 7" not in links(detail, "infiniband_link_rate_bytes_per_second")
    assert links(detail, "infiniband_link_capable_rate_bytes_per_second")["leaf01 port 7"][1] == 15e9
    events = {
        (dict(k)["switch"], dict(k)["port"], dict(k)["kind"]): v
        for k, v in by_name(text, "infiniband_switch_events_open").items()
    }
    assert events[("leaf01", "7", "down")] == 1


def test_an_unreachable_switch_keeps_its_last_values_and_says_it_is_not_reached(client, world):
    ids = guids()
    mine = {switch_port("leaf02", n, ids["leaf02"]) for n in range(1, PORTS + 1)}

    def of_leaf02(text: str) -> dict:
        return {
            (name, labels): v for (name, labels), v in samples(text).items() if labels in mine or name.endswith("up")
        }

    before = scrape(client)
    world.builder.mute("leaf02")
    world.poll()
    world.poll()
    text = scrape(client)
    switch = frozenset({"guid": ids["leaf02"], "switch": "leaf02"}.items())
    assert by_name(text, "infiniband_switch_up")[switch] == 0
    assert by_name(text, "infiniband_switch_up")[frozenset({"guid": ids["leaf01"], "switch": "leaf01"}.items())] == 1
    kept = {k: v for k, v in of_leaf02(text).items() if k[1] in mine}
    assert kept == {k: v for k, v in of_leaf02(before).items() if k[1] in mine}
    assert len(kept) == PORTS * (4 + len(SWITCH_COUNTERS)) - 1  # its unused port 6 has no rate
    events = {
        (dict(k)["switch"], dict(k)["port"], dict(k)["kind"], dict(k)["severity"])
        for k in by_name(text, "infiniband_switch_events_open")
    }
    assert ("leaf02", "", "unreachable", "critical") in events
    seen = by_name(text, "infiniband_switch_last_seen_timestamp_seconds")
    assert seen[frozenset({"guid": ids["leaf01"], "switch": "leaf01"}.items())] - seen[switch] == pytest.approx(20)


def test_a_link_trained_below_what_both_ends_support_is_degraded(client, tmp_path, each_db):
    # A host's link trained at DDR from the start (both ends support QDR), reported by its own agent.
    world = LiveWorld(tmp_path / "sim", polls=3, start_faults=("cn003/mlx5_0/1:speed=DDR",))
    world.polls(2)
    world.builder.link("leaf01", 8, "spine01", 2, lanes=4, speed="QDR")  # an inter-switch link at 4X of 12X
    world.poll()
    text = scrape(client)
    degraded = {end: v for end, (_, v) in links(text, "infiniband_link_degraded").items() if v}
    assert degraded == {"leaf01 port 8": 1}
    (words,) = [labels for labels, _ in links(text, "infiniband_link_degraded_info").values()]
    assert {k: words[k] for k in ("end", "peer", *WORDS)} == {
        "end": "leaf01 port 8",
        "peer": "spine01 port 2",
        "speed": "QDR",
        "width": "4X",
        "capable_speed": "QDR",
        "capable_width": "12X",
    }
    # The host's own link is its port's: degraded against what both ends support, the far end named.
    detail = scrape(client, set="detail")
    host = port("cn003", "mlx5_0", 1)
    assert by_name(text, "infiniband_port_degraded")[host] == 1
    (words,) = [dict(k) for k in by_name(text, "infiniband_port_degraded_info") if host <= k]
    assert (words["speed"], words["expected_speed"]) == ("DDR", "QDR")
    assert words["expected_source"] == "both ends support 12X QDR"
    peer = links(detail, "infiniband_link_info")["cn003 mlx5_0/1"][0]["peer"]
    assert words["peer"] == peer and peer.startswith("leaf0")

    rates = links(detail, "infiniband_link_rate_bytes_per_second")
    capable = links(detail, "infiniband_link_capable_rate_bytes_per_second")
    assert (rates["leaf01 port 8"][1], capable["leaf01 port 8"][1]) == (5e9, 15e9)
    assert (rates["cn003 mlx5_0/1"][1], capable["cn003 mlx5_0/1"][1]) == (7.5e9, 15e9)
    info = {dict(k)["end"]: dict(k) for k in by_name(detail, "infiniband_link_info")}
    assert {end for end, labels in info.items() if labels["type"] != "host"} == set(links(text))
    assert {k: info["leaf01 port 8"][k] for k in ("peer", "speed", "width", "capable_speed", "capable_width")} == {
        "peer": "spine01 port 2",
        "speed": "QDR",
        "width": "4X",
        "capable_speed": "QDR",
        "capable_width": "12X",
    }
    assert (info["cn003 mlx5_0/1"]["speed"], info["cn003 mlx5_0/1"]["capable_speed"]) == ("DDR", "QDR")


def test_symbol_errors_on_a_switch_port_count_up(client, world):
    port = switch_port("spine01", 3, guids()["spine01"])
    before = by_name(scrape(client), "infiniband_switch_port_symbol_error_total")[port]
    world.builder.add("spine01", 3, "symbol_error", 500)
    world.poll()
    assert by_name(scrape(client), "infiniband_switch_port_symbol_error_total")[port] == before + 500


def test_a_switch_without_extended_counters_gives_its_32_bit_data_and_a_capped_one_none(client, world):
    # A switch whose agent has no PortCountersExtended: the 32-bit counts, one stuck at all-ones.
    old = {"port_xmit_data_64": None, "port_rcv_data_64": None, "port_xmit_packets_64": None}
    world.builder.counters[("leaf01", 1)] = {**old, "port_xmit_data": 4000, "port_xmit_packets": 5}
    world.builder.counters[("leaf01", 1)]["port_rcv_data"] = all_ones("port_rcv_data")
    world.poll()
    text = scrape(client)
    port = switch_port("leaf01", 1, guids()["leaf01"])
    assert by_name(text, "infiniband_switch_port_transmit_data_bytes_total")[port] == 4000
    assert by_name(text, "infiniband_switch_port_transmit_packets_total")[port] == 5
    assert port not in by_name(text, "infiniband_switch_port_receive_data_bytes_total")
    capped = {dict(k)["counter"] for k in by_name(text, "infiniband_switch_port_capped") if port <= k}
    assert capped == {"port_rcv_data"}
    assert by_name(text, "infiniband_switch_port_receive_packets_total")[port] == 0  # its 64-bit twin


def test_the_sets_split_switch_series_as_they_split_hosts(client, world):
    health = {name for name, _ in samples(scrape(client, set="health"))}
    counters = {name for name, _ in samples(scrape(client, set="counters"))}
    detail = {name for name, _ in samples(scrape(client, set="detail"))}
    assert {"infiniband_switch_port_up", "infiniband_switch_up", "infiniband_link_up", "infiniband_link_degraded"} <= (
        health
    )
    assert not {n for n in health if n.endswith("_total")} | LINK_DETAIL & health
    assert {family.name + "_total" for family in SWITCH_COUNTERS} <= counters
    assert not {n for n in counters if n.startswith("infiniband_") and not n.endswith("_total")}
    # detail: the links' info series and rates, the host ports' info series and lanes, none of a switch port.
    assert {n for n in detail if not n.startswith("fabricweb_")} == {
        *LINK_DETAIL,
        "infiniband_port_info",
        "infiniband_port_lanes",
        "infiniband_port_expected_lanes",
    }
    detail_nodes = {
        dict(k).get("node") for n, k in samples(scrape(client, set="detail")) if n == "infiniband_port_info"
    }
    assert detail_nodes and detail_nodes <= HOSTS
    everything = {name for name, _ in samples(scrape(client))}
    assert everything == (health | counters) and not everything & LINK_DETAIL


def owners(parts: list[dict]) -> list[set[str]]:
    """The host and switch names each scrape has series of."""
    out = []
    for part in parts:
        names = set()
        for name, labels in part:
            labels = dict(labels)
            if name.startswith("infiniband_link_"):
                names.add(labels["node"])
            elif "switch" in labels:
                names.add(labels["switch"])
            elif "node" in labels:
                names.add(labels["node"])
        out.append(names)
    return out


def test_shards_and_node_globs_split_switches_and_links_too(client, world):
    whole = samples(scrape(client))
    parts = [samples(scrape(client, shard=f"{k}/3")) for k in range(3)]
    named = owners(parts)
    assert set().union(*named) == HOSTS | set(SWITCHES)
    assert sum(map(len, named)) == len(HOSTS) + len(SWITCHES)
    fabric = {k for k in whole if not k[0].startswith(("fabricweb_", "infiniband_fabric_collector"))}
    merged = {k for p in parts for k in p if not k[0].startswith(("fabricweb_", "infiniband_fabric_collector"))}
    assert merged == fabric
    leaves = samples(scrape(client, node="leaf*"))
    assert owners([leaves]) == [{"leaf01", "leaf02"}]
    assert {dict(k)["end"] for k in by_name_of(leaves, "infiniband_link_up")} == {
        f"{leaf} port {n}" for leaf in ("leaf01", "leaf02") for n in range(7, 13)
    }


def by_name_of(found: dict, name: str) -> set:
    return {labels for n, labels in found if n == name}


def test_a_fabric_with_switches_encodes_as_prometheus_client_does(world):
    world.builder.down("leaf01", 9)
    world.builder.link("leaf02", 8, "spine01", 8, lanes=4, speed="DDR")
    world.builder.mute("spine01")
    world.poll()
    for series in ("all", "health", "counters", "detail"):
        assert_same_bytes(FabricCollector(Selection(series), timezone.now()).families())
    assert_same_bytes(FabricCollector(Selection("all", 1, 3), timezone.now()).families())
    assert_same_bytes(FabricCollector(Selection("all", node_glob="spine*"), timezone.now()).families())


def test_promtool_finds_nothing_to_lint_in_a_scrape_with_switches(client, world):
    world.builder.down("leaf01", 9)
    world.builder.mute("leaf02")
    world.poll()
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (scripts/system-packages installs Debian's prometheus)"
    for series in ("all", "detail"):
        result = subprocess.run(
            [promtool, "check", "metrics"], input=scrape(client, set=series), capture_output=True, text=True
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result.stderr


def test_a_renamed_switch_is_never_served_from_what_was_kept(client, world):
    scrape(client)  # keeps leaf01's rows, lines and label texts
    Node.objects.filter(name="leaf01").update(name="leafA")
    text = scrape(client)
    switches = {dict(k)["switch"] for k in by_name(text, "infiniband_switch_port_up")}
    assert switches == {"leafA", "leaf02", "spine01"}
    assert {dict(k)["switch"] for k in by_name(text, "infiniband_switch_port_symbol_error_total")} == switches
    assert "leafA port 7" in links(text) and "leaf01 port 7" not in links(text)
    assert_same_bytes(FabricCollector(Selection(), timezone.now()).families())
