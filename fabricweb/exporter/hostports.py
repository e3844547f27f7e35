"""The health series of a host's ports and devices (node_exporter's families: `node, device, port`),
built from a key of the values they are made of and memoised across scrapes (grouped.py).
The families: specs.PORT_SPECS and DEVICE_SPECS (the default set), PORT_DETAIL_SPECS (?set=detail),
DEVICE_PCIE_SPECS (?set=pcie).
"""

from __future__ import annotations

import orjson

from collectors.pcie import usable_gbps
from fabricweb.health.records import context

from .grouped import Memo
from .names import PREFIX
from .series import Samples
from .specs import BYTES_PER_GBIT, DEVICE_PCIE, PORT_DETAIL_GAUGES, PORT_GAUGES


def port_health(key: tuple, device_key: tuple) -> tuple[Samples, dict[str, str]]:
    """The health samples of the port of `key` (as collector._ports builds it: its device's
    serial, number, rate, tables.PORT_HEALTH_FIELDS as JSON and whether its node is stale) on the
    device of `device_key` (as collector._devices builds it), and its labels.

    A port with no link (portfacts.HAS_LINK) has no rate, lanes, speed or width: the kernel's `rate`
    of a DOWN/Polling port (`10 Gb/sec (4X SDR)`) is no link. A stale node's port has no sample of its
    state at all (state, physical state, up, degraded, rate, lanes, capped counters): what it last said
    is not its state now, and infiniband_node_up 0 says why; what is expected of it and its info stay.

    Values + 0.0: -0.0 and 0.0 are one key, so they print alike (0.0).
    """
    _, number, rate_gbps, fields, stale = key
    node, device = device_key[:2]
    row = orjson.loads(fields)
    (state_id, phys_id, _, lanes, speed, exp_speed, exp_lanes, exp_source, capped, up, degraded) = row[:11]
    linked = bool(row[16]) and not stale  # SQLite's 1/0, PostgreSQL's true/false
    if isinstance(capped, str):  # SQLite's json_array carries a JSON column as its text
        capped = orjson.loads(capped)
    up, degraded = 1 if up else 0, 1 if degraded else 0
    labels = {"node": node, "device": device, "port": str(number)}
    rate = None if rate_gbps is None or not linked else rate_gbps * BYTES_PER_GBIT
    gauges = (None,) * len(PORT_GAUGES) if stale else (state_id, phys_id, rate, up, degraded)
    samples: Samples = {}
    for (name, _), value in zip(PORT_GAUGES, gauges, strict=True):
        if value is not None:
            samples[PREFIX + name] = [(labels, value + 0.0, None)]
    expected = context.rate(exp_speed, exp_lanes)
    if expected is not None:
        samples[PREFIX + "port_expected_rate_bytes_per_second"] = [(labels, expected.bytes_per_second + 0.0, None)]
    samples[PREFIX + "port_expected_up"] = [(labels, 1.0 if row[17] else 0.0, None)]
    if degraded and not stale:
        # The words InfinibandPortDegraded's summary needs, for the few ports that are degraded: the
        # default set has no per-port info series (port_info is ?set=detail's); and the far end of its cable
        # where the fabric view knows it (the default set has no series of a host's own link).
        link = _link_words(lanes, speed, exp_speed, exp_lanes, exp_source, linked)
        samples[PREFIX + "port_degraded_info"] = [({**labels, **link, "peer": row[11] or ""}, 1, None)]
    if capped and not stale:
        samples[PREFIX + "port_capped"] = [(labels, 1, counter) for counter in capped]
    return samples, labels


def _link_words(lanes, speed, exp_speed, exp_lanes, exp_source, linked: bool) -> dict[str, str]:
    return {
        "speed": (speed or "") if linked else "",
        "width": f"{lanes}X" if lanes and linked else "",
        "expected_speed": exp_speed or "",
        "expected_width": f"{exp_lanes}X" if exp_lanes else "",
        "expected_source": exp_source or "",
    }


def port_detail(key: tuple, device_key: tuple) -> tuple[Samples, dict[str, str]]:
    """?set=detail's samples of the port of `key` (as port_health's): its lanes, and its info series."""
    _, number, _, fields, stale = key
    node, device, fw_ver, hca_type = device_key[:4]
    row = orjson.loads(fields)
    link_layer, lanes, speed, exp_speed, exp_lanes, exp_source = row[2:8]
    linked = bool(row[16]) and not stale
    labels = {"node": node, "device": device, "port": str(number)}
    samples: Samples = {}
    for (name, _), value in zip(PORT_DETAIL_GAUGES, (lanes if linked else None, exp_lanes), strict=True):
        if value is not None:
            samples[PREFIX + name] = [(labels, value + 0.0, None)]
    info_labels = {
        **labels,
        "link_layer": link_layer or "",
        **_link_words(lanes, speed, exp_speed, exp_lanes, exp_source, linked),
        "hca_type": hca_type or "",
        "firmware_version": fw_ver or "",
    }
    samples[PREFIX + "port_info"] = [(info_labels, 1, None)]
    return samples, labels


def device_health(key: tuple, _: tuple) -> tuple[Samples, dict[str, str]]:
    """The default set's samples of the device of `key` (node, name, then tables.DEVICE_FIELDS[3:11]), and
    its labels: its info, its PCIe link's usable bandwidth and the narrowest hop's on its path."""
    node, name, fw_ver, hca_type, board_id, cur_gts, cur_width, _, _, path = key
    labels = {"node": node, "device": name}
    info_labels = {
        "board_id": board_id or "",
        **labels,
        "firmware_version": fw_ver or "",
        "hca_type": hca_type or "",
    }
    samples: Samples = {PREFIX + "info": [(info_labels, 1, None)]}
    usable = usable_gbps(cur_gts, cur_width)
    if usable is not None:
        samples[PREFIX + "device_pcie_bandwidth_bytes_per_second"] = [(labels, usable * BYTES_PER_GBIT + 0.0, None)]
    narrowest = path_usable_gbps(usable, path)
    if narrowest is not None:
        samples[PREFIX + "pcie_path_usable_gbps"] = [(labels, narrowest + 0.0, None)]
    return samples, labels


def path_usable_gbps(own: float | None, path: str | None) -> float | None:
    """The narrowest of the device's own link (`own` Gb/s) and the hops above it (Device.pcie_path's JSON
    text: hops nearest first); a hop whose link is unknown does not count, nor does a path not sent."""
    tree = orjson.loads(path) if path else None
    hops = (tree or {}).get("hops") or []
    known = [usable_gbps(h.get("current_gts"), h.get("current_width")) for h in hops]
    found = [g for g in (own, *known) if g is not None]
    return min(found) if found else None


def device_pcie(key: tuple, _: tuple) -> tuple[Samples, dict[str, str]]:
    """?set=pcie's samples of the device of `key` (as device_health's): its PCIe link, current and max."""
    node, name = key[:2]
    labels = {"node": node, "device": name}
    samples: Samples = {}
    for (family, _), value in zip(DEVICE_PCIE, key[5:9], strict=True):
        if value is not None:
            samples[PREFIX + family] = [(labels, value + 0.0, None)]
    return samples, labels


def gpu_relations(node: str, gpus: list | None) -> list[dict[str, str]]:
    """The label sets of infiniband_gpu_nic_relation_info for a node's GPUs (Node.gpus): one per GPU and
    RDMA device, by GPU address and device name."""
    out = []
    for gpu in sorted(gpus or (), key=lambda g: str(g.get("address"))):
        for device, relation in sorted((gpu.get("nics") or {}).items()):
            out.append({"node": node, "gpu": str(gpu.get("address") or ""), "device": device, "relation": relation})
    return out


# Kept across scrapes (bounded: grouped.MAX_MEMO_ROWS), shared by the threads of a web process.
port_memo = Memo(port_health)
port_detail_memo = Memo(port_detail)
device_memo = Memo(device_health)
device_pcie_memo = Memo(device_pcie)
