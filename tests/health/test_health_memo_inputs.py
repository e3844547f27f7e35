"""Covers fabricweb/health/engine/memo.py.

A device's part of a quiet port's inputs follows its PCIe path as ingest stores it: a new path, or its node's GPUs
becoming known, is a change the fast path must see; the same path at the next poll is not."""

from __future__ import annotations

from fabricweb.health.engine import memo
from fabricweb.health.records.context import Norms, Policies
from fabricweb.inventory.models import Device, Node
from fabricweb.thresholds import DEFAULT

NORMS = Norms(DEFAULT, 3, Policies.of([]), {})


def hop(width: int) -> dict:
    return {
        "address": "0000:3a:00.0",
        "kind": "switch port",
        "current_gts": 16.0,
        "current_width": width,
        "max_gts": 16.0,
        "max_width": 16,
        "numa_node": 0,
        "local_cpulist": "0-15",
    }


def device(path: dict | None, gpus: list | None = None) -> Device:
    return Device(node=Node(name="cn001", gpus=gpus), name="mlx5_0", hca_type="MT4123", pcie_path=path)


def path_part(d: Device) -> tuple | None:
    return memo.device_inputs(d, NORMS)[-1]


def test_it_keys_the_same_path_alike_at_every_poll():
    d = device({"hops": [hop(16)]})
    first = path_part(d)
    assert path_part(d) == first == (("0000:3a:00.0", "switch port", 16.0, 16, 16.0, 16, 0, "0-15"),)


def test_it_sees_a_new_path_that_ingest_stored():
    d = device({"hops": [hop(16)]})
    before = path_part(d)
    d.pcie_path = {"hops": [hop(8)]}  # a retrained bridge: ingest stores the snapshot's new path
    after = path_part(d)
    assert after != before and after[0][3] == 8


def test_it_sees_the_nodes_gpus_become_known():
    d = device(None)
    unknown = path_part(d)
    d.node.gpus = []  # the agent sends PCIe trees now: no path means no bridge
    assert unknown == (False,) and path_part(d) == (True,)
