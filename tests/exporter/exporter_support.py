"""A simulated fabric whose polls end now (so /metrics finds it fresh), and scrape helpers."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.test import Client
from django.utils import timezone
from fabric_support import FabricWorld
from health_db_fabric import STEP, SimFabric
from prometheus_client.parser import text_string_to_metric_families

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
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def by_name(text: str, name: str) -> dict[frozenset, float]:
    return {labels: v for (n, labels), v in samples(text).items() if n == name}


def port(node: str, device: str, number: int) -> frozenset:
    return frozenset({"node": node, "device": device, "port": str(number)}.items())


def switch_port(switch: str, number: int, guid: str) -> frozenset:
    return frozenset({"guid": guid, "port": str(number), "switch": switch}.items())
