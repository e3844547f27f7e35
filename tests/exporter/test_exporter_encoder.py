"""Covers fabricweb/exporter/collector.py, fabricweb/exporter/encoder.py, fabricweb/exporter/selection.py,
fabricweb/exporter/series.py, fabricweb/inventory/readings.py, fabricweb/exporter/views.py; through them
fabricweb/exporter/auth.py, fabricweb/exporter/congestion.py, fabricweb/exporter/counters.py,
fabricweb/exporter/jobseries.py, fabricweb/exporter/links.py, fabricweb/exporter/specs.py,
fabricweb/exporter/switchports.py, fabricweb/exporter/texts.py.

The fast encoder gives prometheus_client's bytes: fabricweb/exporter/encoder.py against
generate_latest (text and OpenMetrics, every escaping prometheus_client negotiates) on the
fixture trees, on a simulated fabric with every fault, on hostile device strings, and on
hypothesis-made families; and its label cache never serves a label set that changed."""

from __future__ import annotations

import math

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.exposition import choose_encoder

from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.encoder import encode
from fabricweb.exporter.selection import Selection
from fabricweb.exporter.series import COUNTER, GAUGE, Families
from fabricweb.inventory import readings
from fabricweb.inventory.models import Device, Node, NodeHwReadings, NodeReadings, Port
from tests.exporter.exporter_support import (
    ACCEPTS,
    EVERY_FAULT,
    LiveSim,
    Registry,
    assert_same_bytes,
    assert_scrapes_match,
    ingest_tree,
)
from tests.fixture_trees import NODE_EXPORTER, PROCFS

HOSTILE = (
    'quo"te',
    "back\\slash\\",
    "new\nline\r\n",
    '\\"\\n',
    "ünïcødé ✓ 🙂",
    "line\u2028sep\x0bvt\x1c",
    "{}=,# EOF",
    "",
)


def test_the_fixture_trees_encode_as_prometheus_client_does(each_db):
    ingest_tree(PROCFS, "cn001")
    ingest_tree(NODE_EXPORTER, "cn002")
    for series in ("all", "health", "counters", "detail", "hw", "pcie"):
        assert_scrapes_match(Selection(series))


def test_a_fabric_with_every_fault_encodes_as_prometheus_client_does(tmp_path, each_db):
    fabric = LiveSim(tmp_path / "sim", polls=4)
    fabric.polls(1)
    fabric.fault(*EVERY_FAULT)
    fabric.polls(3)
    families = FabricCollector(Selection(), timezone.now()).families()
    names = {family.name for family in families}
    assert {"infiniband_port_capped", "infiniband_port_degraded_info", "infiniband_events_open"} <= names
    assert_same_bytes(families)
    hw = FabricCollector(Selection("hw"), timezone.now()).families()
    assert "infiniband_port_hw_stat" in {family.name for family in hw}
    assert_same_bytes(hw)
    assert_scrapes_match(Selection(shard=1, shards=3))
    assert_scrapes_match(Selection("counters", node_glob="cn00[12]"))


def hostile_fabric() -> None:
    now = timezone.now()
    for i, text in enumerate(HOSTILE):
        node = Node.objects.create(name=f"cn{i:03d}{text}", first_seen_at=now, last_ingested_at=now)
        device = Device.objects.create(
            node=node, name=f"mlx5_{text}", fw_ver=text, hca_type=text, board_id=text, first_seen_at=now
        )
        port = Port.objects.create(
            device=device,
            number=1,
            state_id=4,
            link_layer=text,
            speed=text[:8],  # a column of 8 characters
            expected_source=text,
            lanes=4,
            counters={"symbol_error": i, "port_rcv_data": 2**60 + i},
            capped=["port_xmit_wait"],
            hw_counters={text or "x": i, "out_of_buffer": 2**53 + 1, "lifespan": 10},
            first_seen_at=now,
        )
        row = NodeReadings.objects.create(node=node, **readings.encode([port]))  # its counters, as ingest stores them
        NodeHwReadings.objects.create(readings=row, hw_counters=readings.encode_hw([port]))


def test_hostile_device_strings_encode_as_prometheus_client_does(each_db):
    hostile_fabric()
    families = FabricCollector(Selection(), timezone.now()).families()
    info = next(f for f in families if f.name == "infiniband_info")
    assert {sample.labels["firmware_version"] for sample in info.to_metric().samples} == set(HOSTILE)
    assert_same_bytes(families)


def test_the_view_serves_the_encoders_bytes(client, db):
    hostile_fabric()
    now = timezone.now()
    for accept in ACCEPTS[:2]:
        body = client.get("/metrics", HTTP_ACCEPT=accept).getvalue()
        encoder, _ = choose_encoder(accept)
        expected = encoder(FabricCollector(Selection(), now))
        # The scrape's own cost and the ingest's age differ from one scrape to the next; the view adds the broker's
        # memory (tests/exporter/test_exporter_broker.py).
        varies = (
            b"fabricweb_exporter_collect_seconds ",
            b"fabricweb_exporter_last_ingest_age_seconds ",
            b"fabricweb_broker_",
            b"# HELP fabricweb_broker_",
            b"# TYPE fabricweb_broker_",
        )
        assert [line for line in body.split(b"\n") if not line.startswith(varies)] == [
            line for line in expected.split(b"\n") if not line.startswith(varies)
        ]


def test_a_changed_label_set_is_rendered_anew_not_from_the_cache(db):
    hostile_fabric()
    encoder, _ = choose_encoder("")
    before = encode(FabricCollector(Selection(), timezone.now()).families(), encoder)
    Device.objects.filter(fw_ver='quo"te').update(fw_ver="22.1")
    Node.objects.filter(name__startswith="cn000").update(name="cn999")
    families = FabricCollector(Selection(), timezone.now()).families()
    after = encode(families, encoder)
    assert after == encoder(Registry(families))
    assert b'firmware_version="22.1"' in after and b'node="cn999"' in after
    assert b'firmware_version="quo\\"te"' in before and b'firmware_version="quo\\"te"' not in after


label_values = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 0.0, -0.0, 1, 1.0, True, 999_999, 1_000_000, 2**53 + 1]),
)


@st.composite
def fabric_families(draw) -> Families:
    """Families shaped like the collector's: ports sharing one label dict, an extra label that sorts
    first (hw_stat's counter) and one that sorts among the others (the merged fallback)."""
    ports = [
        {"node": draw(label_values), "device": draw(label_values), "port": draw(label_values)}
        for _ in range(draw(st.integers(1, 4)))
    ]
    families = Families()
    for name, typ in (("infiniband_a", GAUGE), ("infiniband_b", COUNTER)):
        family = families.family(name, draw(label_values), typ)
        for labels in ports:
            family.add(labels, draw(numbers))
    for name, extra in (("infiniband_hw", "counter"), ("infiniband_open", "kind")):
        family = families.family(name, draw(label_values), COUNTER, extra=extra)
        for labels in ports:
            for _ in range(draw(st.integers(0, 3))):
                family.add(labels, draw(numbers), draw(label_values))
    info = families.family("infiniband_info", "1")
    for labels in ports:
        info.add({**labels, "firmware_version": draw(label_values), "board_id": draw(label_values)}, 1)
    families.family("fabricweb_x", "no labels").add({}, draw(numbers))
    return families


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(fabric_families())
def test_hypothesis_families_encode_as_prometheus_client_does(families):
    assert_same_bytes(families)


def test_ints_are_formatted_once_a_scrape_and_negative_zero_keeps_its_sign():
    families = Families()
    family = families.family("infiniband_v", "values")
    for value in (0, -0.0, 0.0, 1, True, 1.0, math.nan, 10**7, 10**7 + 1):
        family.add({"port": "1"}, value)
    encoder, _ = choose_encoder("")
    lines = encode(families, encoder).decode().splitlines()[2:]
    assert [line.split(" ")[1] for line in lines] == [
        "0.0", "-0.0", "0.0", "1.0", "1.0", "1.0", "NaN", "1e+07", "1.0000001e+07",
    ]  # fmt: skip
    assert_same_bytes(families)


@pytest.mark.parametrize("accept", ACCEPTS)
def test_an_empty_fabric_encodes_as_prometheus_client_does(db, accept):
    assert_scrapes_match()
