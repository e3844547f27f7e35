"""Covers fabricweb/health/records/context.py, fabricweb/health/engine/engine.py,
fabricweb/health/management/commands/import_policies.py; through them fabricweb/health/records/eventbudget.py,
fabricweb/health/engine/pciehost.py.

The PCIe path rules through the real ingest: the simulator's PCIe layouts and faults, and small
trees laid out as two-socket hosts, stored by ingest and judged by the engine into events."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.health.engine import engine
from fabricweb.health.models import Event
from fabricweb.health.records import context
from fabricweb.inventory.models import Node
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.health_db.health_db_fabric import T0, SimFabric, open_events
from tests.pcie_layouts import snapshot, sockets

KINDS = ("pcie_path", "pcie_shared", "gpu_affinity", "pcie_numa")


def pcie_events() -> dict[str, Event]:
    return {k: e for k, e in open_events().items() if e.kind in KINDS}


def test_a_dgx_like_node_with_every_link_at_full_width_opens_nothing(each_db, sim_dir):
    fab = SimFabric(sim_dir, 6, layout=("cn001:dgx",))
    fab.polls(3)
    assert Event.objects.filter(kind__in=KINDS).count() == 0
    assert fab.alarms == {}


def test_an_uplink_retrained_at_x8_opens_at_the_next_poll_and_resolves_once_it_trains_back(each_db, sim_dir, settings):
    fab = SimFabric(sim_dir, 6)
    fab.polls(2)
    assert pcie_events() == {}
    fab.fault("cn003/mlx5_0:uplink=x8")
    fab.poll()
    events = pcie_events()
    assert list(events) == ["pcie_path:cn003/mlx5_0"]
    event = events["pcie_path:cn003/mlx5_0"]
    assert event.severity == "warning" and event.device.name == "mlx5_0"
    assert "trained Gen4 x8 (~126 Gb/s), limits a 200 Gb/s (4X HDR) port; the link supports Gen4 x16" in event.message
    assert event.details["hop_kind"] == "PCIe switch uplink" and event.details["pcie_gbps"] == 126.0
    fab.clear("cn003/mlx5_0:uplink")
    fab.polls(settings.FABRIC_RESOLVE_AFTER - 1)
    assert list(pcie_events()) == ["pcie_path:cn003/mlx5_0"]  # clean polls counted, not yet enough
    fab.poll()
    assert pcie_events() == {}
    event.refresh_from_db()
    assert event.resolved_at is not None and event.reason == f"clear for {settings.FABRIC_RESOLVE_AFTER} polls"


def test_a_misbuilt_node_opens_its_shared_uplink_advice_beside_its_path_and_a_policy_raises_it(
    each_db, sim_dir, tmp_path
):
    fab = SimFabric(sim_dir, 6, layout=("cn001:misbuilt",))
    fab.polls(2)
    events = pcie_events()
    # The uplink wired x4 limits the card's port (pcie_path, about the card) and two GPUs share it (pcie_shared).
    assert sorted(e.kind for e in events.values()) == ["pcie_path", "pcie_shared"]
    ((key, event),) = ((k, e) for k, e in events.items() if e.kind == "pcie_shared")
    assert key.startswith("pcie_shared:cn001/0000:") and event.severity == "info"
    assert event.device is None and event.port is None  # about the node's uplink, not one card
    assert event.message.startswith("cn001: mlx5_0 (200 Gb/s) and GPU 0000:")
    assert "share a PCIe switch uplink" in event.message and "trained Gen4 x4 (~63 Gb/s)" in event.message
    assert "narrower than the port of mlx5_0: the GPUs' traffic to host memory crosses it" in event.message
    assert event.details["port_gbps"] > event.details["pcie_gbps"]
    assert events["pcie_path:cn001/mlx5_0"].severity == "info"  # at its maximum: built so, not trained low
    assert fab.alarms == {}

    policies = tmp_path / "policies.yaml"
    policies.write_text("policies:\n  - name: gpu-nodes\n    node: 'cn00[1-3]'\n    pcie_shared: warning\n")
    call_command("import_policies", str(policies), stdout=io.StringIO())
    fab.poll()
    event.refresh_from_db()
    assert (event.severity, event.resolved_at) == ("warning", None)
    assert event.reason.startswith("was info, now warning: cn001: ")
    assert sorted(pcie_events()) == ["pcie_path:cn001/mlx5_0", key]


def _ingest(root: str, host: str, polls: int = 1, start: int = 0) -> None:
    for i in range(start, start + polls):
        at = T0 + timedelta(seconds=10 * (i + 1))
        ingest_snapshot(snapshot(root, host, at.timestamp()), now=at)


def test_a_gpu_on_the_other_socket_from_both_ib_cards_opens_gpu_affinity(each_db, tmp_path):
    root = str(tmp_path / "sys")
    sockets(root, {"mlx5_0": 0, "mlx5_1": 0}, {"0000:c1:00.0": 1})
    _ingest(root, "cn017")
    assert list(pcie_events()) == ["gpu_affinity:cn017/0000:c1:00.0"]
    event = pcie_events()["gpu_affinity:cn017/0000:c1:00.0"]
    assert event.severity == "info"
    assert event.message.startswith(
        "cn017: GPU 0000:c1:00.0 (NUMA node 1) reaches its nearest IB card mlx5_0 only across the CPU sockets (SYS)"
    )


def test_a_gpu_gone_from_the_host_clears_its_affinity_event(each_db, tmp_path, settings):
    before, after = str(tmp_path / "before"), str(tmp_path / "after")
    sockets(before, {"mlx5_0": 0, "mlx5_1": 0}, {"0000:c1:00.0": 1})
    sockets(after, {"mlx5_0": 0, "mlx5_1": 0}, {})  # the GPU taken out: no event names it any more
    _ingest(before, "cn017")
    assert list(pcie_events()) == ["gpu_affinity:cn017/0000:c1:00.0"]
    _ingest(after, "cn017", settings.FABRIC_RESOLVE_AFTER, start=1)
    assert Node.objects.get(name="cn017").gpus == []
    assert pcie_events() == {}
    assert Event.objects.get(kind="gpu_affinity").reason == f"clear for {settings.FABRIC_RESOLVE_AFTER} polls"


@pytest.mark.parametrize(
    ("numa", "cpus", "found"),
    [
        ({"mlx5_0": -1, "mlx5_1": 0, "mlx5_2": 1}, None, ["pcie_numa:cn017/mlx5_0"]),
        ({"mlx5_0": -1, "mlx5_1": 0}, {0: "0-63", -1: "0-63"}, []),
    ],
    ids=["two sockets", "one socket"],
)
def test_a_card_without_a_numa_node_is_flagged_only_on_a_multi_socket_host(each_db, tmp_path, numa, cpus, found):
    root = str(tmp_path / "sys")
    sockets(root, numa, {}, **({"cpus": cpus} if cpus else {}))
    _ingest(root, "cn017")
    assert list(pcie_events()) == found


@pytest.fixture
def judge_queries(monkeypatch) -> list[int]:
    """How many queries each judge_batch made (ingest's receiver calls it inside its transaction)."""
    counts = []
    judge_batch = engine.judge_batch

    def counting(results):
        with CaptureQueriesContext(connection) as ctx:
            outcome = judge_batch(results)
        counts.append(len(ctx.captured_queries))
        return outcome

    monkeypatch.setattr(engine, "judge_batch", counting)
    return counts


def test_judging_the_pcie_layout_adds_no_query(each_db, sim_dir, judge_queries):
    SimFabric(sim_dir, 3).polls(2)
    plain = judge_queries[-3:]
    Node.objects.all().delete()
    context.forget()
    judge_queries.clear()
    SimFabric(sim_dir, 3, layout=("cn001:dgx", "cn002:misbuilt")).polls(2)
    assert judge_queries[-3:] == plain == [1] * 3  # the open events of each node; policies and norms are cached
