"""Covers fabricweb/health/records/staleness.py, fabricweb/exporter/encoder.py, fabricweb/exporter/collector.py,
fabricweb/exporter/selection.py, fabricweb/exporter/views.py.

/metrics on a simulated fabric ingested through the real path: every fault kind, stale nodes,
scrape splitting, content negotiation, credentials, and promtool's lint."""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess

import pytest
from django.test import override_settings
from django.utils import timezone

from fabricweb.health.records.staleness import check_stale
from fabricweb.inventory.models import NodeReadings
from tests.exporter.exporter_support import EVERY_FAULT, LiveSim, by_name, port, samples, scrape

COUNTER_NAMES = ("infiniband_port_data_received_bytes_total", "infiniband_symbol_error_total")


@pytest.fixture
def faulty(tmp_path, each_db):
    """Six nodes, two clean polls, then every fault kind for three polls."""
    fabric = LiveSim(tmp_path / "sim", polls=5)
    fabric.polls(2)
    fabric.fault(*EVERY_FAULT)
    fabric.polls(3)
    return fabric


def test_every_fault_kind_shows_in_the_series(client, faulty):
    text = scrape(client)
    up = by_name(text, "infiniband_port_up")
    degraded = by_name(text, "infiniband_port_degraded")
    rate = by_name(text, "infiniband_rate_bytes_per_second")
    expected = by_name(text, "infiniband_port_expected_rate_bytes_per_second")

    # speed=QDR on a 4X HDR port: up, degraded, 40 Gb/s against 200 Gb/s in bytes per second.
    slow = port("cn001", "mlx5_0", 1)
    assert (up[slow], degraded[slow], rate[slow], expected[slow]) == (1, 1, 5e9, 25e9)
    narrow = port("cn001", "mlx5_1", 1)
    assert degraded[narrow] == 1
    # The words of a degraded port's link, in the default set for those ports only; every port's in detail.
    degraded_info = {
        (dict(k)["device"], dict(k)["width"], dict(k)["speed"]) for k in by_name(text, "infiniband_port_degraded_info")
    }
    assert degraded_info == {("mlx5_0", "4X", "QDR"), ("mlx5_1", "1X", "HDR")}
    detail = scrape(client, set="detail")
    assert by_name(detail, "infiniband_port_lanes")[narrow] == 1
    assert by_name(detail, "infiniband_port_expected_lanes")[narrow] == 4
    port_info = {
        (dict(k)["device"], dict(k)["port"]): dict(k)
        for k in by_name(detail, "infiniband_port_info")
        if dict(k)["node"] == "cn001"
    }
    assert port_info[("mlx5_0", "1")]["speed"] == "QDR" and port_info[("mlx5_0", "1")]["expected_speed"] == "HDR"
    assert port_info[("mlx5_1", "1")]["width"] == "1X" and port_info[("mlx5_1", "1")]["expected_width"] == "4X"

    down, disabled = port("cn003", "mlx5_0", 1), port("cn003", "mlx5_1", 1)
    assert (up[down], up[disabled], degraded[down]) == (0, 0, 0)
    assert by_name(text, "infiniband_state_id")[down] == 1
    assert by_name(text, "infiniband_physical_state_id")[down] == 2
    assert by_name(text, "infiniband_physical_state_id")[disabled] == 3

    # A capped counter: flagged, and no sample for it rather than the all-ones value; the others stay.
    saturated = port("cn002", "mlx4_0", 1)
    capped = {dict(k)["counter"] for k in by_name(text, "infiniband_port_capped") if saturated <= k}
    assert {"port_xmit_data", "port_rcv_data"} <= capped
    assert saturated not in by_name(text, "infiniband_port_data_transmitted_bytes_total")
    assert saturated not in by_name(text, "infiniband_port_data_received_bytes_total")
    assert by_name(text, "infiniband_symbol_error_total")[saturated] == 0
    # ConnectX-3's 64-bit counters_ext/ keep counting: the legacy series are there.
    assert by_name(text, "infiniband_legacy_data_transmitted_bytes_total")[saturated] > 0
    # Its 4X FDR link (7e9 B/s) loses 10% of its time: 8.75e8 counts a poll of the assumed 8 bytes.
    congested = by_name(text, "infiniband_port_congestion_ratio")
    assert congested[saturated] == pytest.approx(0.1)
    assert slow not in congested  # its waits are a trickle: under 0.01%, no sample

    # The vanished port is down and has no counters; its node is otherwise fine.
    gone = port("cn006", "mlx5_1", 1)
    assert up[gone] == 0
    assert gone not in by_name(text, "infiniband_port_data_received_bytes_total")
    assert port("cn006", "mlx5_0", 1) in by_name(text, "infiniband_port_data_received_bytes_total")

    pcie = frozenset({"node": "cn004", "device": "mlx5_0"}.items())
    # Gen3 x8: ~63 Gb/s usable, its own link the narrowest on its path (the simulator sends no bridge).
    assert by_name(text, "infiniband_pcie_path_usable_gbps")[pcie] == pytest.approx(63.0, abs=0.1)
    pcie_set = scrape(client, set="pcie")
    assert by_name(pcie_set, "infiniband_device_pcie_link_width_lanes")[pcie] == 8
    assert by_name(pcie_set, "infiniband_device_pcie_max_link_width_lanes")[pcie] == 16
    assert by_name(pcie_set, "infiniband_device_pcie_link_speed_gts")[pcie] == 8

    events = {
        (e["node"], e["device"], e["port"], e["kind"], e["severity"]): v
        for e, v in ((dict(k), v) for k, v in by_name(text, "infiniband_events_open").items())
    }
    for where, kind in [
        (("cn001", "mlx5_0", "1"), "degraded"),
        (("cn001", "mlx5_1", "1"), "degraded"),
        (("cn003", "mlx5_0", "1"), "down"),
        (("cn003", "mlx5_1", "1"), "down"),
        (("cn005", "mlx5_0", "1"), "symbol_errors"),
        (("cn005", "mlx5_1", "1"), "flapping"),
        (("cn002", "mlx4_0", "1"), "congestion"),  # 10% of 30 s lost in the 50 s seen; 32 bits last ~49 s
        (("cn004", "mlx5_0", ""), "pcie"),
    ]:
        assert any(k[:4] == (*where, kind) for k in events), f"no open {kind} event on {where}: {sorted(events)}"
    assert all(v >= 1 for v in events.values())
    assert set(by_name(text, "infiniband_node_up").values()) == {1.0}


def test_promtool_finds_nothing_to_lint_in_a_scrape_with_every_fault(client, faulty):
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (scripts/system-packages installs Debian's prometheus)"
    result = subprocess.run([promtool, "check", "metrics"], input=scrape(client), capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result.stderr


def test_a_stale_nodes_ports_say_nothing_of_their_state_and_their_counters_are_dropped(client, tmp_path, db):
    fabric = LiveSim(tmp_path / "sim", nodes=2, polls=6)
    fabric.polls(2)
    fabric.silent.add("cn002")
    fabric.polls(4)  # 40 s of silence: past 3 polls of FABRIC_POLL_INTERVAL (10 s)
    check_stale({"cn002": 3})  # what the poll ledger says of it: three polls sent and not taken
    text = scrape(client)
    assert by_name(text, "infiniband_node_up") == {
        frozenset({("node", "cn001")}): 1,
        frozenset({("node", "cn002")}): 0,
    }
    seen = by_name(text, "infiniband_node_last_seen_timestamp_seconds")
    assert seen[frozenset({("node", "cn001")})] - seen[frozenset({("node", "cn002")})] == pytest.approx(40, abs=1)
    for name in COUNTER_NAMES:
        nodes = {dict(k)["node"] for k in by_name(text, name)}
        assert nodes == {"cn001"}, name
    # Its ports' state is unknown: no sample says it up (or anything else), node_up 0 says why.
    for name in (
        "infiniband_port_up",
        "infiniband_port_degraded",
        "infiniband_state_id",
        "infiniband_physical_state_id",
        "infiniband_rate_bytes_per_second",
    ):
        assert {dict(k)["node"] for k in by_name(text, name)} == {"cn001"}, name
    detail = scrape(client, set="detail")
    assert {dict(k)["node"] for k in by_name(detail, "infiniband_port_lanes")} == {"cn001"}
    # What is expected of them, and what they are, stay for the drill-down; their link is not known.
    assert port("cn002", "mlx4_0", 1) in by_name(text, "infiniband_port_expected_up")
    infos = [dict(k) for k in by_name(detail, "infiniband_port_info") if dict(k)["node"] == "cn002"]
    assert infos and all((i["speed"], i["width"]) == ("", "") and i["hca_type"] for i in infos)


@pytest.fixture
def clean(tmp_path, db):
    fabric = LiveSim(tmp_path / "sim", nodes=6, polls=2)
    fabric.polls(2)
    return fabric


def nodes_in(text: str) -> set[str]:
    return {dict(labels)["node"] for (_, labels) in samples(text) if "node" in dict(labels)}


def test_shards_split_the_fabric_by_node_without_overlap(client, clean):
    whole = samples(scrape(client))
    parts = [samples(scrape(client, shard=f"{k}/3")) for k in range(3)]
    node_sets = [nodes_in_keys(p) for p in parts]
    assert set().union(*node_sets) == set(clean.nodes)
    assert sum(len(s) for s in node_sets) == len(clean.nodes)
    fabric_series = {k for k in whole if not k[0].startswith("fabricweb_")}
    merged = {k for p in parts for k in p if not k[0].startswith("fabricweb_")}
    assert merged == fabric_series
    # Stable: the same shard twice is the same nodes.
    assert nodes_in_keys(samples(scrape(client, shard="1/3"))) == node_sets[1]


def nodes_in_keys(s: dict) -> set[str]:
    return {dict(labels)["node"] for (_, labels) in s if "node" in dict(labels)}


def test_a_node_whose_readings_cannot_be_read_loses_only_its_counters(client, clean, caplog):
    NodeReadings.objects.filter(node__name="cn002").update(counters=b'{"ports": [[1, null, [0, 5]]]}')
    with caplog.at_level(logging.WARNING, logger="fabricweb.inventory.readings"):
        text = scrape(client)
    received = by_name(text, COUNTER_NAMES[0])
    assert {dict(labels)["node"] for labels in received} == set(clean.nodes) - {"cn002"}
    assert "cn002" in nodes_in(text)  # its ports' state is still there
    assert [r.getMessage() for r in caplog.records if r.name == "fabricweb.inventory.readings"] == [
        "a node's readings: its counters cannot be read (KeyError('names')): its ports' counters are left out"
    ]


def test_a_node_glob_selects_those_nodes(client, clean):
    assert nodes_in(scrape(client, node="cn00[12]")) == {"cn001", "cn002"}
    assert nodes_in(scrape(client, node="nomatch*")) == set()


def test_the_health_set_has_no_counters_and_the_counter_set_no_health(client, clean):
    health = {name for name, _ in samples(scrape(client, set="health"))}
    counters = {name for name, _ in samples(scrape(client, set="counters"))}
    assert {"infiniband_port_up", "infiniband_node_up", "infiniband_info"} <= health
    assert not {n for n in health if n.endswith("_total")}
    assert set(COUNTER_NAMES) <= counters
    # ...but the share of link time lost, made from port_xmit_wait in the same readings (exporter/congestion.py).
    made = ("infiniband_port_congestion_ratio", "infiniband_switch_port_congestion_ratio")
    assert not {n for n in counters if n.startswith("infiniband_") and not n.endswith("_total") and n not in made}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"set": "everything"}, "set='everything': one of all, health, counters, detail, hw, pcie"),
        ({"shard": "3/3"}, "shard='3/3': K/N with 0 <= K < N"),
        ({"shard": "one/two"}, "shard='one/two': K/N"),
        ({"shard": "0/0"}, "K/N with 0 <= K < N"),
        ({"nodes": "cn001"}, "unknown parameter(s): nodes"),
        ({"node": "x" * 101}, "at most 100 characters"),
    ],
)
def test_bad_parameters_get_a_400_that_says_why(client, db, query, says):
    response = client.get("/metrics", query)
    assert response.status_code == 400
    assert says in response.content.decode()


def test_openmetrics_when_the_scraper_asks_for_it(client, clean):
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    body = response.getvalue().decode()
    assert body.endswith("# EOF\n")
    assert "# TYPE infiniband_symbol_error counter" in body
    plain = client.get("/metrics")
    assert plain["Content-Type"].startswith("text/plain; version=0.0.4")


def test_the_exposition_is_streamed_in_chunks_that_join_to_the_whole(client, clean, monkeypatch):
    from prometheus_client.exposition import generate_latest

    from fabricweb.exporter import encoder
    from fabricweb.exporter.collector import FabricCollector
    from fabricweb.exporter.selection import Selection

    monkeypatch.setattr(encoder, "CHUNK_BYTES", 2048)
    response = client.get("/metrics")
    assert response.streaming
    chunks = list(response.streaming_content)
    whole = b"".join(chunks)
    assert len(chunks) > 10 and max(map(len, chunks)) < len(whole) / 2  # never the body at once

    class Registry:
        def collect(self):
            return FabricCollector(Selection(), timezone.now()).collect()

    expected = generate_latest(Registry())
    # The self-metrics (render time) differ from scrape to scrape, and the view adds the broker's: compare the rest.
    assert _without_self(whole) == _without_self(expected)
    assert b"\nfabricweb_broker_memory_used_bytes " in whole


def _without_self(body: bytes) -> list[bytes]:
    return [line for line in body.splitlines() if b"fabricweb_exporter" not in line and b"fabricweb_broker" not in line]


def test_the_exporter_reports_its_own_cost_and_the_newest_ingest(client, clean):
    text = scrape(client)
    own = {name: v for (name, _), v in samples(text).items() if name.startswith("fabricweb_exporter_")}
    fabric = [k for k in samples(text) if not k[0].startswith("fabricweb_")]
    assert own["fabricweb_exporter_samples"] == len(fabric)
    assert 0 < own["fabricweb_exporter_collect_seconds"] < 5
    assert 0 <= own["fabricweb_exporter_last_ingest_age_seconds"] < 30


@override_settings(FABRIC_METRICS_BEARER_TOKEN="s3cret-token")
def test_a_configured_bearer_token_is_required(client, db):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics")["WWW-Authenticate"] == "Bearer"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 200


@override_settings(FABRIC_METRICS_BASIC_AUTH="prometheus:pw:with:colons")
def test_configured_basic_auth_is_required(client, db):
    def auth(user_pw: str) -> str:
        return "Basic " + base64.b64encode(user_pw.encode()).decode()

    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=auth("prometheus:wrong")).status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic !!!").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=auth("prometheus:pw:with:colons")).status_code == 200


def test_only_get_is_served(client, db):
    assert client.post("/metrics").status_code == 405
