"""An RDMA device's PCIe path and a node's GPUs in operator words, for the node page and the API.

Reads what ingest stored (Device.pcie_path, Node.gpus: the snapshot's schema-2 shapes, docs/pcie.md) and
the device's own link (Device.pci_*). Everything here came from the node: untrusted, so a value of the
wrong type reads as unknown, and the pages escape every string.

- The path, nearest first: the card's own PCI function, each bridge above it, the root port last (and the
  host bridge the root port hangs on). A switch port just below the root port is the **PCIe switch uplink**:
  the link from the switch to the CPU, which every device below that switch shares.
- The **narrowest** hop: the nearest hop whose link carries the least, marked only when it carries less
  than another hop of the path (a path at Gen4 x16 throughout has none).
- A node's GPUs and how each reaches each RDMA device, in `nvidia-smi topo -m` words (collectors.pcitopo).

Null means unknown: Node.gpus null is an agent that sends no PCIe tree (schema 1); a device's path null
with the node's GPUs known (a list, maybe empty) is a card with no bridge above its function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collectors.pcitopo import RELATIONS

from .links import pci_function_link

if TYPE_CHECKING:
    from ..models import Device, Node

# nvidia-smi topo -m's legend, in short.
RELATION_LEGEND = (
    ("PIX", "at most one PCIe switch (or bridge) between them"),
    ("PXB", "several PCIe switches, not through the host bridge"),
    ("PHB", "through a PCIe host bridge (the CPU)"),
    ("NODE", "across host bridges within one NUMA node"),
    ("SYS", "across NUMA nodes (the sockets' interconnect), or a NUMA node unknown"),
)
NO_TREE = "unknown: this node's agent sends no PCIe tree (schema 1)"
NO_BRIDGE = "no bridge above the card's PCI function: its own link is the whole path"

_HOP_NAMES = {"root port": "root port", "switch port": "PCIe switch port", "bridge": "PCIe bridge"}
UPLINK = "PCIe switch uplink"


def _num(value) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _link(fields: dict, address: str | None) -> dict:
    return pci_function_link(
        address,
        _num(fields.get("current_gts")),
        _num(fields.get("current_width")),
        _num(fields.get("max_gts")),
        _num(fields.get("max_width")),
        _num(fields.get("numa_node")),
    )


def _hop(kind: str, name: str, link: dict, **ids) -> dict:
    trained_low = link["trained_low"]
    return {
        "address": link["address"],
        "kind": kind,  # as the agent read it: function, switch port, root port, bridge
        "name": name,  # in operator words: the card's name, PCIe switch port, PCIe switch uplink, root port
        **ids,
        "current_gts": link["current_gts"],
        "current_width": link["current_width"],
        "max_gts": link["max_gts"],
        "max_width": link["max_width"],
        "link": link["name"],  # `Gen4 x8`
        "supports": link["max_name"],  # `Gen4 x16`
        "usable_gbps": link["usable_gbps"],
        "trained_low": trained_low,
        "note": f"trained {link['name']}, supports {link['max_name']}" if trained_low else None,
        "numa_node": link["numa_node"],
        "narrowest": False,
    }


def pcie_path(device: Device) -> dict | None:
    """The card's path hop by hop, nearest first, its own function first; None when unknown (NO_TREE,
    NO_BRIDGE: `absent_reason` says which)."""
    stored = device.pcie_path
    if not isinstance(stored, dict):
        return None
    hops_in = stored.get("hops")
    raw = [h for h in hops_in if isinstance(h, dict)] if isinstance(hops_in, list) else []
    own = pci_function_link(
        device.pci_address,
        device.pci_current_gts,
        device.pci_current_width,
        device.pci_max_gts,
        device.pci_max_width,
        device.numa_node,
    )
    hops = [_hop("function", device.name, own)]
    for i, h in enumerate(raw):
        kind = _text(h.get("kind")) or "bridge"
        name = _HOP_NAMES.get(kind, "PCIe bridge")
        above = raw[i + 1].get("kind") if i + 1 < len(raw) else None
        if kind == "switch port" and above == "root port":
            name = UPLINK
        ids = {k: _num(h.get(k)) for k in ("class_code", "vendor", "device")}
        hops.append(_hop(kind, name, _link(h, _text(h.get("address"))), **ids))
    carried = [h["usable_gbps"] for h in hops if h["usable_gbps"] is not None]
    narrowest = None
    if carried and min(carried) < max(carried):
        narrowest = next(h for h in hops if h["usable_gbps"] == min(carried))
        narrowest["narrowest"] = True
    names = {h["address"]: h["name"] for h in hops[1:] if h["address"]}
    neighbours = []
    listed = stored.get("neighbours")
    for n in listed if isinstance(listed, list) else ():
        if not isinstance(n, dict):
            continue
        via = _text(n.get("via"))
        kind = _text(n.get("kind"))
        neighbours.append(
            {
                "address": _text(n.get("address")),
                "kind": kind,  # gpu, rdma
                "name": _text(n.get("name")),  # the RDMA device's name; null for a GPU
                "via": via,  # the deepest hop of this path above both: they share it and every hop above it
                "via_name": names.get(via),
            }
        )
    return {
        "host_bridge": _text(stored.get("host_bridge")),
        "hops": hops,
        "narrowest": narrowest["address"] if narrowest else None,
        "usable_gbps": min(carried) if carried else None,  # what the narrowest known hop carries
        "neighbours": neighbours,
    }


def absent_reason(node: Node, device: Device) -> str | None:
    """Why a device shows no path: its node sends no PCIe tree, or no bridge is above the card."""
    if isinstance(device.pcie_path, dict):
        return None
    return NO_TREE if node.gpus is None else NO_BRIDGE


def gpus(node: Node) -> list[dict] | None:
    """The node's GPUs in bus order, each with its link and its relation to each RDMA device; None: unknown."""
    stored = node.gpus
    if not isinstance(stored, list):
        return None
    out = []
    for g in stored:
        if not isinstance(g, dict):
            continue
        link = _link(g, _text(g.get("address")))
        raw = g.get("nics") if isinstance(g.get("nics"), dict) else {}
        nics = {str(name): (rel if rel in RELATIONS else None) for name, rel in raw.items()}
        known = [(name, rel) for name, rel in nics.items() if rel]
        near = min(known, key=lambda kv: RELATIONS.index(kv[1]), default=None)
        out.append(
            {
                "address": link["address"],
                **{k: _num(g.get(k)) for k in ("class_code", "vendor", "device")},
                "numa_node": link["numa_node"],
                "local_cpulist": _text(g.get("local_cpulist")),
                "link": link,
                "usable_gbps": link["usable_gbps"],
                "nics": nics,
                "nearest": {"device": near[0], "relation": near[1]} if near else None,
            }
        )
    return out


def gpu_matrix(gpu_list: list[dict] | None) -> dict | None:
    """The GPU x RDMA device matrix as `nvidia-smi topo -m` prints it: RDMA devices as columns (in the order
    the agent listed them), a row per GPU; None when the GPUs are unknown or there are none."""
    if not gpu_list:
        return None
    columns: list[str] = []
    for g in gpu_list:
        columns.extend(n for n in g["nics"] if n not in columns)
    rows = [
        {
            "label": f"GPU{i}",
            "address": g["address"],
            "numa_node": g["numa_node"],
            "link": g["link"],
            "cells": [g["nics"].get(n) for n in columns],
            "nearest": g["nearest"],
        }
        for i, g in enumerate(gpu_list)
    ]
    return {"columns": columns, "rows": rows, "legend": RELATION_LEGEND}
