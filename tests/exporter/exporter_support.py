"""A simulated fabric whose polls end now (so /metrics finds it fresh), and scrape helpers; a small fabric
stored (`small_fabric`, `ingest_tree`), and the checks that the encoder writes what prometheus_client would
(`assert_same_bytes`, `assert_scrapes_match`)."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from pathlib import Path

from django.test import Client
from django.utils import timezone
from prometheus_client.exposition import choose_encoder
from prometheus_client.parser import text_string_to_metric_families

from collectors import read_host, to_dict
from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.encoder import encode
from fabricweb.exporter.selection import Selection
from fabricweb.exporter.series import Families
from fabricweb.inventory import readings
from fabricweb.inventory.models import Device, Node, NodeHwReadings, NodeReadings, Port
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.fabric.fabric_support import FabricWorld
from tests.health_db.health_db_fabric import STEP, SimFabric

# Every fault kind of the simulator, each on a port (or node, device) of its own.
EVERY_FAULT = (
    "cn001/mlx5_0/1:speed=QDR",
    "cn001/mlx5_1/1:width=1X",
    "cn003/mlx5_0/1:down",
    "cn003/mlx5_1/1:disabled",
    "cn005/mlx5_0/1:symbol-errors=600/min",
    "cn005/mlx5_1/1:flap",
    "cn002/mlx4_0/1:saturate",
    "cn004/mlx5_0/1:reset",
    "cn004:pcie=GEN3x8",
    "cn006/mlx5_1/1:vanish",
)


class WallClock:
    """For a simulated world: `polls` polls from now on end at about now (a scrape judges by the wall clock)."""

    def __init__(self, out, nodes: int = 6, polls: int = 4, **kw) -> None:
        super().__init__(out, nodes, **kw)
        self.start: datetime = timezone.now() - timedelta(seconds=polls * STEP)

    @property
    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.sim.clock)


class LiveSim(WallClock, SimFabric):
    """SimFabric (hosts) on the wall clock."""


class LiveWorld(WallClock, FabricWorld):
    """FabricWorld (hosts and a switch fabric) on the wall clock."""


def scrape(client: Client, **params: str) -> str:
    response = client.get("/metrics", params)
    assert response.status_code == 200, response.getvalue()
    return response.getvalue().decode()  # streamed: getvalue() joins the chunks


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) -> value, for every sample of an exposition."""
    return dict(_parsed(text))


# A test asks several families of one scrape (by_name), and prometheus_client's parser takes ~80 ms for a
# fabric's exposition: each text is parsed once.
@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> tuple[tuple[tuple[str, frozenset], float], ...]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return tuple(out.items())


def by_name(text: str, name: str) -> dict[frozenset, float]:
    return {labels: v for (n, labels), v in samples(text).items() if n == name}


def port(node: str, device: str, number: int) -> frozenset:
    return frozenset({"node": node, "device": device, "port": str(number)}.items())


def switch_port(switch: str, number: int, guid: str) -> frozenset:
    return frozenset({"guid": guid, "port": str(number), "switch": switch}.items())


# What Prometheus sends (OpenMetrics first), plain text, and each escaping prometheus_client knows.
ACCEPTS = (
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4",
    "",
    "text/plain;version=1.0.0;escaping=allow-utf-8",
    "text/plain;version=1.0.0;escaping=dots",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
    "application/openmetrics-text;version=1.0.0;escaping=values",
    "application/openmetrics-text;version=1.0.0;escaping=underscores",
)


class Registry:
    def __init__(self, families: Families) -> None:
        self.families = families

    def collect(self):
        return [family.to_metric() for family in self.families]


def assert_same_bytes(families: Families) -> None:
    for accept in ACCEPTS:
        encoder, _ = choose_encoder(accept)
        expected = encoder(Registry(families))
        assert encode(families, encoder) == expected, accept
        assert encode(families, encoder) == expected, f"{accept}, label texts cached"


def assert_scrapes_match(selection: Selection | None = None) -> None:
    assert_same_bytes(FabricCollector(selection or Selection(), timezone.now()).families())


def small_fabric(nodes: int = 2) -> None:
    """`nodes` fresh nodes of one HCA with two 4X HDR ports, LinkUp and as expected."""
    now = timezone.now()
    for i in range(nodes):
        node = Node.objects.create(name=f"cn{i:03d}", first_seen_at=now, last_ingested_at=now)
        device = Device.objects.create(
            node=node, name="mlx5_0", fw_ver="20.31.1014", hca_type="MT4123", pci_current_gts=16.0,
            pci_current_width=16, first_seen_at=now,
        )  # fmt: skip
        ports = [
            Port.objects.create(
                device=device, number=number, state_id=4, phys_state_id=5, link_layer="InfiniBand",
                rate_gbps=200.0, lanes=4, speed="HDR", expected_speed="HDR", expected_lanes=4,
                expected_source="learned from this port's history", counters={"symbol_error": i},
                first_seen_at=now,
            )
            for number in (1, 2)
        ]  # fmt: skip
        row = NodeReadings.objects.create(node=node, **readings.encode(ports))  # their counters, as ingest stores them
        NodeHwReadings.objects.create(readings=row, hw_counters=readings.encode_hw(ports))


def ingest_tree(root: Path, node: str) -> None:
    now = timezone.now()
    snap = to_dict(read_host(str(root), host=node, use_verbs=False, now=now.timestamp()))
    assert ingest_snapshot(snap, now=now).status == "stored"
