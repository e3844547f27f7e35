"""Covers fabricweb/api/views/nodes.py.

GET /api/v1/nodes/<name>: the node's GPUs and each device's PCIe path, on both databases, from
rows ingest stored (tests/pcie_nodes.py). Null is unknown, never an empty list."""

from __future__ import annotations

import pytest

from fabricweb.inventory.models import Device, Node
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import snapshot
from tests.pcie_nodes import GPU_ADDRESSES, GPU_NUMA, MLX5_0_HOPS, store_dgx
from tests.pcie_trees import DGX_A100_MATRIX, DGX_A100_NICS

GEN4_X16 = 16.0 * 128 / 130 * 16  # ~252 Gb/s usable


def _devices(body: dict) -> dict[str, dict]:
    return {d["name"]: d for d in body["devices"]}


def test_the_node_lists_its_gpus_with_their_link_and_the_published_relations(each_db, api, tmp_path):
    store_dgx(tmp_path)
    gpus = api.json("/api/v1/nodes/dgx01")["gpus"]
    assert [g["address"] for g in gpus] == GPU_ADDRESSES
    assert [g["numa_node"] for g in gpus] == GPU_NUMA
    assert [[g["nics"][n] for n in DGX_A100_NICS] for g in gpus] == DGX_A100_MATRIX
    first = gpus[0]
    assert (first["vendor"], first["device"], first["class_code"]) == (0x10DE, 0x20B0, 0x0302)
    assert first["usable_gbps"] == pytest.approx(GEN4_X16)
    assert first["link"]["name"] == "Gen4 x16" and first["link"]["trained_low"] is False
    assert first["local_cpulist"] == "48-63,176-191"
    assert [g["nearest"] for g in gpus[::2]] == [
        {"device": n, "relation": "PXB"} for n in ("mlx5_0", "mlx5_2", "mlx5_6", "mlx5_8")
    ]


def test_each_device_carries_its_path_hop_by_hop_nearest_first(each_db, api, tmp_path):
    store_dgx(tmp_path)
    devices = _devices(api.json("/api/v1/nodes/dgx01"))
    assert set(devices) == set(DGX_A100_NICS)
    path = devices["mlx5_0"]["pcie_path"]
    assert [(h["address"], h["name"]) for h in path["hops"]] == MLX5_0_HOPS
    assert [h["kind"] for h in path["hops"]] == ["function", *["switch port"] * 4, "root port"]
    assert {(h["link"], h["supports"], h["trained_low"], h["note"]) for h in path["hops"]} == {
        ("Gen4 x16", "Gen4 x16", False, None)
    }
    assert all(h["usable_gbps"] == pytest.approx(GEN4_X16) for h in path["hops"])
    assert path["narrowest"] is None and not any(h["narrowest"] for h in path["hops"])  # no hop narrows it
    assert path["usable_gbps"] == pytest.approx(GEN4_X16) and path["host_bridge"] == "pci0000:00"
    assert [(n["kind"], n["name"], n["address"], n["via"], n["via_name"]) for n in path["neighbours"]] == [
        ("gpu", None, "0000:07:00.0", "0000:01:00.0", "PCIe switch uplink"),
        ("gpu", None, "0000:0f:00.0", "0000:0a:00.0", "PCIe switch port"),
        ("rdma", "mlx5_1", "0000:12:00.0", "0000:0a:00.0", "PCIe switch port"),
    ]
    storage = devices["mlx5_4"]["pcie_path"]
    assert [(h["address"], h["name"]) for h in storage["hops"]] == [
        ("0000:61:00.0", "mlx5_4"),
        ("0000:60:03.1", "root port"),
    ]


def test_a_switch_uplink_trained_x8_of_x16_is_the_narrowest_hop_with_both_figures(each_db, api, tmp_path):
    store_dgx(tmp_path, width=8)
    devices = _devices(api.json("/api/v1/nodes/dgx01"))
    for name in ("mlx5_0", "mlx5_1"):  # both cards below the first quadrant's uplink
        path = devices[name]["pcie_path"]
        assert path["narrowest"] == "0000:01:00.0", name
        assert path["usable_gbps"] == pytest.approx(GEN4_X16 / 2)
        uplink = next(h for h in path["hops"] if h["narrowest"])
        assert uplink["name"] == "PCIe switch uplink"
        assert (uplink["current_gts"], uplink["current_width"], uplink["max_gts"], uplink["max_width"]) == (
            16.0,
            8,
            16.0,
            16,
        )
        assert (uplink["link"], uplink["supports"], uplink["trained_low"]) == ("Gen4 x8", "Gen4 x16", True)
        assert uplink["note"] == "trained Gen4 x8, supports Gen4 x16"
        assert uplink["usable_gbps"] == pytest.approx(126.03, abs=0.01)
        root = path["hops"][-1]
        assert (root["name"], root["link"], root["trained_low"], root["narrowest"]) == (
            "root port",
            "Gen4 x8",
            True,
            False,
        )
    assert devices["mlx5_2"]["pcie_path"]["narrowest"] is None


def test_a_node_whose_agent_sends_no_pcie_tree_has_null_gpus_and_paths(each_db, api):
    snap = snapshot(host="cn001")
    snap["schema"] = 1
    ingest_snapshot(snap)
    Node.objects.filter(name="cn001").update(gpus=None)
    body = api.json("/api/v1/nodes/cn001")
    assert body["gpus"] is None
    assert body["devices"] and all(d["pcie_path"] is None for d in body["devices"])
    Node.objects.filter(name="cn001").update(gpus=[])  # schema 2, no GPU: a list, empty
    assert api.json("/api/v1/nodes/cn001")["gpus"] == []


def test_strings_the_node_sent_are_served_as_escaped_json_strings(each_db, api, tmp_path):
    snap = store_dgx(tmp_path)
    path = next(d["pcie_path"] for d in snap["devices"] if d["name"] == "mlx5_0")
    path["hops"][0]["address"] = "<script>alert(1)</script>"
    path["hops"][1]["current_width"] = "16"  # not a number: unknown, not a crash
    Device.objects.filter(node__name="dgx01", name="mlx5_0").update(pcie_path=path)
    response = api.get("/api/v1/nodes/dgx01")
    assert b"<script>" not in response.content and b"\\u003cscript\\u003ealert(1)" in response.content
    hops = _devices(response.json())["mlx5_0"]["pcie_path"]["hops"]
    assert hops[1]["address"] == "<script>alert(1)</script>"
    assert (hops[2]["current_width"], hops[2]["link"], hops[2]["usable_gbps"]) == (None, None, None)
