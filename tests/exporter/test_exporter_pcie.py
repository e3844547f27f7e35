"""Covers collectors/pcie.py.

/metrics' PCIe path series: the narrowest hop's usable bandwidth per device in the default
set, and which GPU sits how near which device behind ?set=pcie, from Device.pcie_path and Node.gpus."""

from __future__ import annotations

import pytest
from django.utils import timezone

from collectors.pcie import usable_gbps
from fabricweb.inventory.models import Device, Node
from tests.exporter.exporter_support import by_name, samples, scrape

GEN4 = 16.0


def hop(address: str, width: int, kind: str = "switch port") -> dict:
    return {
        "address": address, "class_code": 0x060400, "vendor": 0x10B5, "device": 0x8764, "current_gts": GEN4,
        "current_width": width, "max_gts": GEN4, "max_width": 16, "numa_node": 0, "local_cpulist": "0-63",
        "kind": kind,
    }  # fmt: skip


def host(name: str, gpus: list | None, paths: dict[str, dict | None]) -> None:
    now = timezone.now()
    node = Node.objects.create(name=name, first_seen_at=now, last_ingested_at=now, gpus=gpus)
    for device, path in paths.items():
        Device.objects.create(
            node=node, name=device, fw_ver="28.39.1002", hca_type="MT4129", pci_current_gts=GEN4,
            pci_current_width=16, pci_max_gts=GEN4, pci_max_width=16, pcie_path=path, first_seen_at=now,
        )  # fmt: skip


def dev(node: str, device: str) -> frozenset:
    return frozenset({"node": node, "device": device}.items())


def test_the_narrowest_hop_on_a_cards_path_sets_its_usable_bandwidth(client, each_db):
    narrow_uplink = {"host_bridge": "pci0000:40", "hops": [hop("0000:41:00.0", 16), hop("0000:40:01.1", 8)],
                     "neighbours": []}  # fmt: skip
    full = {"host_bridge": "pci0000:c0", "hops": [hop("0000:c1:00.0", 16), hop("0000:c0:01.1", 16, "root port")],
            "neighbours": []}  # fmt: skip
    host("cn042", [], {"mlx5_0": narrow_uplink, "mlx5_1": full, "mlx5_2": None})

    usable = by_name(scrape(client), "infiniband_pcie_path_usable_gbps")
    # Gen4 x8 above a Gen4 x16 card: the uplink's ~126 Gb/s; a full path and no path sent: the card's own link.
    assert usable == {
        dev("cn042", "mlx5_0"): pytest.approx(usable_gbps(GEN4, 8)),
        dev("cn042", "mlx5_1"): pytest.approx(usable_gbps(GEN4, 16)),
        dev("cn042", "mlx5_2"): pytest.approx(usable_gbps(GEN4, 16)),
    }
    assert round(usable[dev("cn042", "mlx5_0")]) == 126

    # The hop trains back to x16: the next scrape says so (the device's kept row is keyed by its path).
    Device.objects.filter(name="mlx5_0").update(pcie_path=full)
    assert by_name(scrape(client), "infiniband_pcie_path_usable_gbps")[dev("cn042", "mlx5_0")] == pytest.approx(
        usable_gbps(GEN4, 16)
    )


def test_each_gpu_and_device_relation_is_a_series_of_the_pcie_set_only(client, each_db):
    gpus = [
        {"address": "0000:47:00.0", "class_code": 0x030200, "vendor": 0x10DE, "device": 0x20B0, "current_gts": GEN4,
         "current_width": 16, "max_gts": GEN4, "max_width": 16, "numa_node": 0, "local_cpulist": "0-63",
         "nics": {"mlx5_0": "PIX", "mlx5_1": "SYS"}},
        {"address": "0000:07:00.0", "class_code": 0x030200, "vendor": 0x10DE, "device": 0x20B0, "current_gts": GEN4,
         "current_width": 16, "max_gts": GEN4, "max_width": 16, "numa_node": 0, "local_cpulist": "0-63",
         "nics": {"mlx5_0": "NODE", "mlx5_1": "SYS"}},
    ]  # fmt: skip
    host("dgx01", gpus, {"mlx5_0": None, "mlx5_1": None})
    host("cn001", None, {"mlx5_0": None})  # schema 1: GPUs unknown, no series

    relations = {
        (dict(k)["node"], dict(k)["gpu"], dict(k)["device"], dict(k)["relation"]): v
        for k, v in by_name(scrape(client, set="pcie"), "infiniband_gpu_nic_relation_info").items()
    }
    assert relations == {
        ("dgx01", "0000:07:00.0", "mlx5_0", "NODE"): 1,
        ("dgx01", "0000:07:00.0", "mlx5_1", "SYS"): 1,
        ("dgx01", "0000:47:00.0", "mlx5_0", "PIX"): 1,
        ("dgx01", "0000:47:00.0", "mlx5_1", "SYS"): 1,
    }
    default = {name for name, _ in samples(scrape(client))}
    assert "infiniband_gpu_nic_relation_info" not in default and "infiniband_pcie_path_usable_gbps" in default
    # The node glob picks a node's relations as it picks its ports.
    assert not by_name(scrape(client, set="pcie", node="cn*"), "infiniband_gpu_nic_relation_info")
