"""Nodes with a PCIe tree in the inventory, for the node page's and the API's tests.

The DGX A100 tree (tests/pcie_trees.py) is read by the real reader and stored by the real ingest; its
`pcie_path` and `gpus` are then written into the rows in the snapshot's schema-2 shape (Device.pcie_path,
Node.gpus), as ingest stores them: these tests are about what the surfaces show, not about ingest.
"""

from __future__ import annotations

import json
from pathlib import Path

from collectors import read_host, to_dict
from fabricweb.inventory.models import Device, Node
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.pcie_trees import dgx_a100

# mlx5_0's path in the DGX A100 tree, nearest first after its own function (tests/collectors/test_pcipath.py).
MLX5_0_HOPS = [
    ("0000:0c:00.0", "mlx5_0"),
    ("0000:0b:00.0", "PCIe switch port"),
    ("0000:0a:00.0", "PCIe switch port"),
    ("0000:02:04.0", "PCIe switch port"),
    ("0000:01:00.0", "PCIe switch uplink"),
    ("0000:00:01.1", "root port"),
]
GPU_ADDRESSES = [f"0000:{b:02x}:00.0" for b in (0x07, 0x0F, 0x47, 0x4F, 0x87, 0x8F, 0xB7, 0xBF)]
GPU_NUMA = [3, 3, 1, 1, 7, 7, 5, 5]


def store_dgx(tmp: Path, host: str = "dgx01", **first_uplink) -> dict:
    """A DGX A100 (8 GPUs, 8 compute HCAs behind PCIe switches, 2 dual-port storage cards) stored as `host`;
    `first_uplink` (width=8, speed=...) retrains the first quadrant's switch uplink. Returns the JSON snapshot."""
    root = str(tmp / host)
    dgx_a100(root, **first_uplink)
    snap = json.loads(json.dumps(to_dict(read_host(root, host=host, use_verbs=False))))
    paths = {d["name"]: d.pop("pcie_path", None) for d in snap["devices"]}
    gpus = snap.pop("gpus", None)
    ingest_snapshot(snap)
    for name, path in paths.items():
        Device.objects.filter(node__name=host, name=name).update(pcie_path=path)
    Node.objects.filter(name=host).update(gpus=gpus)
    for d, path in zip(snap["devices"], paths.values(), strict=True):
        d["pcie_path"] = path
    snap["gpus"] = gpus
    return snap
