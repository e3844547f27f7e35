"""The prometheus_client collector over the current-state tables: nodes, devices, ports, open events.

One pass over each table per scrape, nothing recomputed from samples. A value that is not
known (a capped or unreadable counter, the counters of a stale node or a vanished port, the
state of a stale node's port, the rate of a port with no link) has no sample rather than a
made-up value. Up, degraded, whether a port has a link and whether a node is stale are
fabricweb.inventory.portfacts' (docs/metrics.md, "Unknown is absent"). Ports share one label
dict across their series: at half a million samples that is most of the memory a scrape needs,
and the encoder renders each shared dict once (fabricweb/exporter/encoder.py). The tables are read in tables.py.

The health series of ports and devices are built from groups memoised across scrapes,
keyed by the values they are made of (grouped.py): per scrape, a port's health is a key.

Nodes are hosts, switches or fabric collectors (fabricweb.inventory.models.Node.Kind), each in
families of its own: a host's ports in node_exporter's families (`node, device, port`), a switch's
in `infiniband_switch_port_*` (`guid, port, switch`), a collector in `infiniband_fabric_collector_*`.
Each cable the fabric view has seen is one series per link family (`infiniband_link_*`), from the
end that speaks for it (Port.link_owner), both ends named in its labels.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from operator import methodcaller

import orjson
from prometheus_client.metrics_core import Metric

from collectors.facts import SWITCH_DEVICE
from collectors.link import judge_link
from collectors.pcie import usable_gbps
from fabricweb.health import context
from fabricweb.health.findings import port_label
from fabricweb.inventory.models import Node

from . import tables
from .grouped import Grouped, Memo, Spec
from .names import HOST_COUNTERS, HW_NOT_COUNTERS, PHYS_STATE_HELP, PREFIX, STATE_HELP, SWITCH_COUNTERS, CounterFamily
from .selection import Selection
from .series import COUNTER, GAUGE, Families, Family, Samples

BYTES_PER_GBIT = 1e9 / 8
SWITCH, COLLECTOR = Node.Kind.SWITCH.value, Node.Kind.COLLECTOR.value


class FabricCollector:
    """What /metrics shows for one scrape: `selection` of the fabric as stored at `now`.

    A prometheus_client collector (`collect()`); `families()` gives the same series as columns
    for fabricweb/exporter/encoder.py.
    """

    def __init__(self, selection: Selection, now: datetime) -> None:
        self.selection = selection
        self.now = now

    def collect(self) -> Iterator[Metric]:
        for family in self.families():
            yield family.to_metric()

    def families(self) -> Families:
        started = time.perf_counter()
        out = Families()
        nodes, newest = self._nodes(out)
        devices = self._devices(out, nodes)
        ports = self._ports(out, devices)
        if self.selection.health:
            self._events(out, nodes, devices, ports)
        # Timed before encoding starts: the encoder's cost is not the tables'.
        self._self_metrics(out, out.sample_count(), time.perf_counter() - started, newest)
        return out

    # -- nodes ---------------------------------------------------------------------

    def _nodes(self, out: Families) -> tuple[dict[int, tuple[str, bool, str | None]], datetime | None]:
        """Node id -> (name, stale, switch GUID or None for a host) for the selected hosts and switches,
        and the newest ingest of any node. Fabric collectors have series of their own and no ports."""
        nodes: dict[int, tuple[str, bool, str | None]] = {}
        newest = None
        health = self.selection.health
        if health:
            up = out.family(PREFIX + "node_up", "1 while the node's snapshots arrive, 0 once it is stale")
            seen = out.family(
                PREFIX + "node_last_seen_timestamp_seconds", "When the node's last snapshot was stored (server clock)"
            )
        switches, collectors = [], []
        for node_id, name, ingested, kind, guid, stale in tables.nodes():
            if ingested is not None and (newest is None or ingested > newest):
                newest = ingested
            if not self.selection.wants(name):
                continue
            if kind == SWITCH:
                # Never stale: an unreachable switch keeps its last values; infiniband_switch_up says it.
                nodes[node_id] = (name, False, guid or "")
                switches.append((node_id, name, ingested, guid or ""))
                continue
            if kind == COLLECTOR:
                collectors.append((name, ingested, bool(stale)))
                continue
            stale = bool(stale)  # SQLite's 1/0
            nodes[node_id] = (name, stale, None)
            if health:
                labels = {"node": name}
                up.add(labels, 0 if stale else 1)
                if ingested is not None:
                    seen.add(labels, ingested.timestamp())
        if health and switches:
            self._switches(out, switches)
        if health and collectors:
            self._collectors(out, collectors)
        return nodes, newest

    def _switches(self, out: Families, switches: list[tuple[int, str, datetime | None, str]]) -> None:
        fabric = tables.switches()
        info = out.family(
            PREFIX + "switch_info", "The switch as the fabric sweeps know it (LID, NodeDescription), value is always 1"
        )
        up = out.family(
            PREFIX + "switch_up",
            "1 while the fabric sweeps reach the switch, 0 from the first full sweep that did not: its ports' "
            "series then keep their last values",
        )
        seen = out.family(
            PREFIX + "switch_last_seen_timestamp_seconds",
            "When the last fabric sweep that reached the switch was stored (server clock)",
        )
        for node_id, name, ingested, guid in switches:
            lid, description, missing = fabric.get(node_id, (None, "", None))
            labels = {"guid": guid, "switch": name}
            info.add({"description": description, **labels, "lid": "" if lid is None else str(lid)}, 1)
            up.add(labels, 0 if missing is not None else 1)
            if ingested is not None:
                seen.add(labels, ingested.timestamp())

    def _collectors(self, out: Families, collectors: list[tuple[str, datetime | None, bool]]) -> None:
        up = out.family(
            PREFIX + "fabric_collector_up", "1 while the fabric collector's sweeps arrive, 0 once it is stale"
        )
        seen = out.family(
            PREFIX + "fabric_collector_last_seen_timestamp_seconds",
            "When the fabric collector's last sweep was stored (server clock)",
        )
        for name, ingested, stale in collectors:
            labels = {"collector": name}
            up.add(labels, 0 if stale else 1)
            if ingested is not None:
                seen.add(labels, ingested.timestamp())

    def _narrowed(self) -> bool:
        # Unselected rows are cheaper to skip in Python than to name in SQL, unless few are selected.
        return self.selection.shards > 1 or self.selection.node_glob is not None

    # -- devices -------------------------------------------------------------------

    def _devices(self, out: Families, nodes: dict[int, tuple[str, bool, str | None]]) -> dict[int, tuple]:
        """Device id -> (node name, device name, stale, row, serial and key of its health row
        (None without the health set, and for a switch), switch GUID or None) for the devices of the
        selected nodes. A switch's one device has no series of its own: its switch has."""
        counters = self.selection.counters
        health = Grouped(out, DEVICE_SPECS, _device_memo) if self.selection.health else None
        rows = tables.devices(list(nodes) if self._narrowed() else None, counters)
        picked = sorted(
            ((nodes[r[1]][0], r[2], r) for r in rows if r[1] in nodes),
            key=lambda item: (item[0], item[1]),
        )
        devices: dict[int, tuple] = {}
        for node, name, row in picked:
            _, stale, guid = nodes[row[1]]
            if guid is not None:
                devices[row[0]] = (node, name, False, row, None, None, guid)
                continue
            if health is not None:
                device_key = (node, name, *row[3:10])
                serial, labels = health.add(device_key)
            else:
                device_key, serial, labels = None, None, {"node": node, "device": name}
            devices[row[0]] = (node, name, stale, row, serial, device_key, None)
            if counters and not stale and row[10] is None and row[11]:
                hw = out.family(
                    PREFIX + "device_hw_stat",
                    "The device's hw_counters/ files (driver-specific counts)",
                    COUNTER,
                    extra="counter",
                )
                for counter, value in sorted(row[11].items()):
                    if isinstance(value, int) and counter not in HW_NOT_COUNTERS:
                        hw.add(labels, value, counter)
        if health is not None:
            health.finish()
        return devices

    # -- ports ---------------------------------------------------------------------

    def _ports(self, out: Families, devices: dict[int, tuple]) -> dict[int, tuple]:
        """Every port of the selected devices: its series, and its link's where it speaks for one;
        returns port id -> (node, device, port number, switch GUID or None)."""
        selection = self.selection
        # The detail set is the links' alone: only the ports that speak for one are read.
        rows = tables.ports(list(devices) if self._narrowed() else None, selection.counters, selection.detail)
        order = {device_id: i for i, device_id in enumerate(devices)}
        picked = sorted((r for r in rows if r[1] in devices), key=lambda r: (order[r[1]], r[2]))
        where: dict[int, tuple] = {}
        health = Grouped(out, PORT_SPECS, _port_memo) if selection.health else None
        switch_health = Grouped(out, SWITCH_PORT_SPECS, _switch_port_memo) if selection.health else None
        links = None
        if selection.health:
            links = Grouped(out, LINK_SPECS, _link_memo)
        elif selection.detail:
            links = Grouped(out, LINK_INFO_SPECS, _link_info_memo)
        counters = PortCounters(out, HOST_COUNTERS, hw=True) if selection.counters else None
        switch_counters = PortCounters(out, SWITCH_COUNTERS, hw=False) if selection.counters else None
        for row in picked:
            node, device, stale, device_row, device_serial, device_key, guid = devices[row[1]]
            where[row[0]] = (node, device, row[2], guid)
            vanished = row[3] is not None or device_row[10] is not None
            if guid is None:
                if health is not None:
                    # Exactly what port_health() reads: the device's health row (names, firmware, HCA
                    # type) by its serial, the port number, rate, the database's JSON of the rest, and
                    # whether its node is stale (then its state is unknown: no sample says it).
                    _, labels = health.add((device_serial, row[2], row[4], row[5], stale), device_key)
                else:
                    labels = {"node": node, "device": device, "port": str(row[2])}
                if counters is not None and not stale and not vanished:
                    counters.add(labels, row)
            else:
                if switch_health is not None:
                    _, labels = switch_health.add(((node, guid), row[2], row[4], row[5]))
                else:
                    labels = {"guid": guid, "port": str(row[2]), "switch": node}
                if switch_counters is not None and not vanished:  # an unreachable switch: its last values
                    switch_counters.add(labels, row)
            if links is not None and row[6]:
                links.add(((node, device, guid is not None), row[2], row[4], row[5]))
        for grouped in (health, switch_health, links, counters, switch_counters):
            if grouped is not None:
                grouped.finish()
        return where

    # -- events --------------------------------------------------------------------

    def _events(self, out: Families, nodes: dict, devices: dict, ports: dict[int, tuple]) -> None:
        samples = out.family(
            PREFIX + "events_open", "Open health events by kind and severity, per port (device, node: empty labels)"
        )
        found, on_switches = [], []
        for node_id, device_id, port_id, kind, severity, n in tables.open_events():
            if node_id not in nodes:
                continue
            name, _, guid = nodes[node_id]
            if port_id is not None:
                port = ports.get(port_id)
                if port is None:
                    where = None
                elif guid is None:
                    where = {"node": port[0], "device": port[1], "port": str(port[2])}
                else:
                    where = {"guid": guid, "port": str(port[2]), "switch": name}
            elif device_id is not None:
                if device_id not in devices:
                    where = None
                elif guid is None:
                    where = {"node": devices[device_id][0], "device": devices[device_id][1], "port": ""}
                else:
                    where = {"guid": guid, "port": "", "switch": name}
            else:
                where = (
                    {"node": name, "device": "", "port": ""}
                    if guid is None
                    else {"guid": guid, "port": "", "switch": name}
                )
            if where is not None:
                (found if guid is None else on_switches).append(({**where, "kind": kind, "severity": severity}, n))
        found.sort(key=lambda item: tuple(item[0].values()))
        for labels, n in found:
            samples.add(labels, n)
        if on_switches:
            on_switches.sort(key=lambda item: tuple(item[0].values()))
            samples = out.family(
                PREFIX + "switch_events_open",
                "Open health events of switches by kind and severity, per port (empty for the whole switch)",
            )
            for labels, n in on_switches:
                samples.add(labels, n)

    # -- the exporter itself --------------------------------------------------------

    def _self_metrics(self, out: Families, samples: int, seconds: float, newest: datetime | None) -> None:
        name = "fabricweb_exporter_collect_seconds"
        out.family(name, "Time this scrape spent reading the tables, before encoding").add({}, seconds)
        name = "fabricweb_exporter_samples"
        out.family(name, "Samples in this scrape, these self-metrics aside").add({}, samples)
        if newest is not None:
            name = "fabricweb_exporter_last_ingest_age_seconds"
            help = "Seconds since the newest snapshot of any node was stored"
            out.family(name, help).add({}, max(0.0, (self.now - newest).total_seconds()))


PORT_GAUGES = (
    ("state_id", STATE_HELP),
    ("physical_state_id", PHYS_STATE_HELP),
    ("rate_bytes_per_second", "Maximum signal transfer rate"),
    (
        "port_up",
        "1 when the port is ACTIVE (or ACTIVE_DEFER) and still reported by its node (none while the node is stale)",
    ),
    ("port_degraded", "1 when the port is up and trained below its expected speed or width"),
    ("port_lanes", "Lanes the link trained at (the X of 4X; none without a link)"),
    ("port_expected_lanes", "Lanes the link is expected to train at"),
)
PORT_SPECS: dict[str, Spec] = {
    **{PREFIX + name: (help, GAUGE, None) for name, help in PORT_GAUGES},
    PREFIX + "port_expected_rate_bytes_per_second": (
        "Signal transfer rate of the link the port is expected to train at",
        GAUGE,
        None,
    ),
    PREFIX + "port_expected_up": (
        "1 when the port should be up (a link policy or the expected cabling says so, else it has been up): "
        "down, it is an outage; 0 when down is not connected",
        GAUGE,
        None,
    ),
    PREFIX + "port_info": ("The port's link and what is expected of it, value is always 1", GAUGE, None),
    PREFIX + "port_capped": ("1 for a counter stuck at all-ones: its rate is unknown until reset", GAUGE, "counter"),
}
DEVICE_PCIE = (
    ("device_pcie_link_speed_gts", "PCIe link speed the HCA trained at, GT/s per lane"),
    ("device_pcie_link_width_lanes", "PCIe lanes the HCA trained at"),
    ("device_pcie_max_link_speed_gts", "PCIe link speed the HCA and slot are capable of, GT/s per lane"),
    ("device_pcie_max_link_width_lanes", "PCIe lanes the HCA and slot are capable of"),
)
DEVICE_SPECS: dict[str, Spec] = {
    PREFIX + "info": ("Non-numeric data from /sys/class/infiniband/<device>, value is always 1.", GAUGE, None),
    **{PREFIX + name: (help, GAUGE, None) for name, help in DEVICE_PCIE},
    PREFIX + "device_pcie_bandwidth_bytes_per_second": (
        "Usable bandwidth of the PCIe link as trained, after line encoding",
        GAUGE,
        None,
    ),
}


def port_health(key: tuple, device_key: tuple) -> tuple[Samples, dict[str, str]]:
    """The health samples of the port of `key` (as collector._ports builds it: its device's
    serial, number, rate, tables.PORT_HEALTH_FIELDS as JSON and whether its node is stale) on the
    device of `device_key` (as _devices builds it), and its labels.

    A port with no link (portfacts.HAS_LINK) has no rate, lanes, speed or width: the kernel's `rate`
    of a DOWN/Polling port (`10 Gb/sec (4X SDR)`) is no link. A stale node's port has no sample of its
    state at all (state, physical state, up, degraded, rate, lanes, capped counters): what it last said
    is not its state now, and infiniband_node_up 0 says why; what is expected of it and its info stay.

    Values + 0.0: -0.0 and 0.0 are one key, so they print alike (0.0).
    """
    _, number, rate_gbps, fields, stale = key
    node, device, fw_ver, hca_type = device_key[:4]
    row = orjson.loads(fields)
    (state_id, phys_id, link_layer, lanes, speed, exp_speed, exp_lanes, exp_source, capped, up,
     degraded) = row[:11]  # fmt: skip
    linked = bool(row[16]) and not stale  # SQLite's 1/0, PostgreSQL's true/false
    if isinstance(capped, str):  # SQLite's json_array carries a JSON column as its text
        capped = orjson.loads(capped)
    up, degraded = 1 if up else 0, 1 if degraded else 0
    labels = {"node": node, "device": device, "port": str(number)}
    rate = None if rate_gbps is None or not linked else rate_gbps * BYTES_PER_GBIT
    if stale:
        gauges = (None, None, None, None, None, None, exp_lanes)
    else:
        gauges = (state_id, phys_id, rate, up, degraded, lanes if linked else None, exp_lanes)
    samples: Samples = {}
    for (name, _), value in zip(PORT_GAUGES, gauges, strict=True):
        if value is not None:
            samples[PREFIX + name] = [(labels, value + 0.0, None)]
    expected = context.rate(exp_speed, exp_lanes)
    if expected is not None:
        samples[PREFIX + "port_expected_rate_bytes_per_second"] = [(labels, expected.bytes_per_second + 0.0, None)]
    samples[PREFIX + "port_expected_up"] = [(labels, 1.0 if row[17] else 0.0, None)]
    info_labels = {
        **labels,
        "link_layer": link_layer or "",
        "speed": (speed or "") if linked else "",
        "width": f"{lanes}X" if lanes and linked else "",
        "expected_speed": exp_speed or "",
        "expected_width": f"{exp_lanes}X" if exp_lanes else "",
        "expected_source": exp_source or "",
        "hca_type": hca_type or "",
        "firmware_version": fw_ver or "",
    }
    samples[PREFIX + "port_info"] = [(info_labels, 1, None)]
    if capped and not stale:
        samples[PREFIX + "port_capped"] = [(labels, 1, counter) for counter in capped]
    return samples, labels


def device_health(key: tuple, _: tuple) -> tuple[Samples, dict[str, str]]:
    """The health samples of the device of `key` (node, name, then tables.DEVICE_FIELDS[3:10]), and its labels."""
    node, name, fw_ver, hca_type, board_id, cur_gts, cur_width, max_gts, max_width = key
    labels = {"node": node, "device": name}
    info_labels = {
        "board_id": board_id or "",
        **labels,
        "firmware_version": fw_ver or "",
        "hca_type": hca_type or "",
    }
    samples: Samples = {PREFIX + "info": [(info_labels, 1, None)]}
    for (family, _), value in zip(DEVICE_PCIE, (cur_gts, cur_width, max_gts, max_width), strict=True):
        if value is not None:
            samples[PREFIX + family] = [(labels, value + 0.0, None)]
    usable = usable_gbps(cur_gts, cur_width)
    if usable is not None:
        samples[PREFIX + "device_pcie_bandwidth_bytes_per_second"] = [(labels, usable * BYTES_PER_GBIT + 0.0, None)]
    return samples, labels


SWITCH_PORT_GAUGES = (
    ("switch_port_up", "1 when the switch port is ACTIVE (or ACTIVE_DEFER) and still reported by its switch"),
    ("switch_port_state_id", STATE_HELP.replace("InfiniBand port", "switch port")),
    ("switch_port_physical_state_id", PHYS_STATE_HELP.replace("InfiniBand port", "switch port")),
    (
        "switch_port_rate_bytes_per_second",
        "Signal transfer rate the switch port's link trained at (none without a link)",
    ),
)
SWITCH_PORT_SPECS: dict[str, Spec] = {
    **{PREFIX + name: (help, GAUGE, None) for name, help in SWITCH_PORT_GAUGES},
    PREFIX + "switch_port_capped": (
        "1 for a counter stuck at all-ones: its rate is unknown until reset",
        GAUGE,
        "counter",
    ),
}


def switch_port_health(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """The health samples of the switch port of `key` ((switch name, GUID), number, rate and
    tables.PORT_HEALTH_FIELDS as JSON, as collector._ports builds it), and its labels."""
    (name, guid), number, rate_gbps, fields = key
    values = orjson.loads(fields)
    state_id, phys_id, capped, up, linked = values[0], values[1], values[8], values[9], values[16]
    if isinstance(capped, str):  # SQLite's json_array carries a JSON column as its text
        capped = orjson.loads(capped)
    labels = {"guid": guid, "port": str(number), "switch": name}
    rate = None if rate_gbps is None or not linked else rate_gbps * BYTES_PER_GBIT
    samples: Samples = {}
    for (family, _), value in zip(SWITCH_PORT_GAUGES, (1 if up else 0, state_id, phys_id, rate), strict=True):
        if value is not None:
            samples[PREFIX + family] = [(labels, value + 0.0, None)]
    if capped:
        samples[PREFIX + "switch_port_capped"] = [(labels, 1, counter) for counter in capped]
    return samples, labels


LINK_SPECS: dict[str, Spec] = {
    PREFIX + "link_up": (
        "1 when the link is up: its end that speaks for it (a host's port, else the first switch port by name "
        "and number) is ACTIVE",
        GAUGE,
        None,
    ),
    PREFIX + "link_degraded": (
        "1 when the link is up and trained below what both ends support, in speed or in width",
        GAUGE,
        None,
    ),
    PREFIX + "link_rate_bytes_per_second": ("Signal transfer rate the link trained at (none while down)", GAUGE, None),
    PREFIX + "link_capable_rate_bytes_per_second": (
        "Signal transfer rate of the fastest and widest link both ends support",
        GAUGE,
        None,
    ),
}
LINK_INFO_SPECS: dict[str, Spec] = {
    PREFIX + "link_info": (
        "The link's speed and width, and what both ends support, value is always 1",
        GAUGE,
        None,
    ),
}


def _link(key: tuple) -> tuple[dict[str, str], list]:
    """The labels of the link of `key` (((node, device, is a switch), number, rate, JSON), as
    collector._ports builds it), and tables.PORT_HEALTH_FIELDS."""
    (node, device, switch), number, _, fields = key
    values = orjson.loads(fields)
    peer_label, peer_node, peer_kind = values[11], values[14], values[15]
    if not switch:
        kind = "host"  # a host's port speaks for its link
    elif peer_kind == SWITCH:
        kind = "inter-switch"
    else:
        kind = "adapter"  # a channel adapter fabricweb has no agent on
    labels = {
        "device": "" if switch else device,
        "end": port_label(node, SWITCH_DEVICE if switch else device, number),
        "node": node,
        "peer": peer_label,
        "peer_node": peer_node or "",
        "port": str(number),
        "type": kind,
    }
    return labels, values


def link_health(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """The link samples of the port of `key`, the end that speaks for its link, and their labels.

    Degraded as the health rules judge a link against what both ends support (collectors.link.judge_link:
    speed and width separately; unknown on either side is not degraded)."""
    labels, values = _link(key)
    rate_gbps = key[2]
    lanes, speed, up, cap_speed, cap_lanes = values[3], values[4], values[9], values[12], values[13]
    actual, capable = context.rate(speed, lanes), context.rate(cap_speed, cap_lanes)
    degraded = bool(up) and actual is not None and capable is not None and judge_link(actual, capable) is not None
    samples: Samples = {
        PREFIX + "link_up": [(labels, 1.0 if up else 0.0, None)],
        PREFIX + "link_degraded": [(labels, 1.0 if degraded else 0.0, None)],
    }
    if up and rate_gbps is not None:
        samples[PREFIX + "link_rate_bytes_per_second"] = [(labels, rate_gbps * BYTES_PER_GBIT + 0.0, None)]
    if capable is not None:
        samples[PREFIX + "link_capable_rate_bytes_per_second"] = [(labels, capable.bytes_per_second + 0.0, None)]
    return samples, labels


def link_info(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """`infiniband_link_info` of the link of `key` (?set=detail): its labels and the training's."""
    labels, values = _link(key)
    lanes, speed, cap_speed, cap_lanes = values[3], values[4], values[12], values[13]
    info = {
        **labels,
        "speed": speed or "",
        "width": f"{lanes}X" if lanes else "",
        "capable_speed": cap_speed or "",
        "capable_width": f"{cap_lanes}X" if cap_lanes else "",
    }
    return {PREFIX + "link_info": [(info, 1, None)]}, info


# Kept across scrapes (bounded: grouped.MAX_MEMO_ROWS), shared by the threads of a web process.
_port_memo = Memo(port_health)
_device_memo = Memo(device_health)
_switch_port_memo = Memo(switch_port_health)
_link_memo = Memo(link_health)
_link_info_memo = Memo(link_info)
MEMOS = (_port_memo, _device_memo, _switch_port_memo, _link_memo, _link_info_memo)


class PortCounters:
    """The counters (and a host's hw_counters) of the ports: the samples of the counter set, ~900,000
    at 20,000 host ports, built a family at a time (one list comprehension per counter), not a sample
    at a time. `specs`: the families and where each port's value comes from (names.HOST_COUNTERS,
    names.SWITCH_COUNTERS).

    The families are still created in the order a port-by-port pass would first use them
    (the exposition's order): when a port of a new shape (which counter files, which capped)
    comes by, the families it is the first to need are created there.
    """

    def __init__(self, out: Families, specs: tuple[CounterFamily, ...], hw: bool) -> None:
        self.out = out
        self.specs = specs
        self.hw_wanted = hw
        # Per port, in order: its labels, counter dicts and capped counters.
        self.labels: list[dict[str, str]] = []
        self.sources: dict[str, list[dict]] = {"counters": [], "counters_ext": []}
        self.hw: list[dict] = []
        self.capped: list[list[str]] = []
        self.shapes: set[tuple] = set()
        self.families: dict[str, Family] = {}
        self.hw_family: Family | None = None

    def add(self, labels: dict[str, str], row: tuple) -> None:
        at = tables.COUNTERS_AT
        capped = row[at] or []
        counters, counters_ext, hw_counters = row[at + 1] or {}, row[at + 2] or {}, row[at + 3] or {}
        if not self.hw_wanted:
            hw_counters = {}
        self.labels.append(labels)
        self.sources["counters"].append(counters)
        self.sources["counters_ext"].append(counters_ext)
        self.hw.append(hw_counters)
        self.capped.append(capped)
        if None in counters.values() or None in counters_ext.values():
            self._first_use(counters, counters_ext, capped, hw_counters)  # a null counter: no shape
            return
        shape = (tuple(counters), tuple(counters_ext), tuple(capped), bool(hw_counters))
        if shape not in self.shapes:
            self.shapes.add(shape)
            self._first_use(counters, counters_ext, capped, hw_counters)

    def _first_use(self, counters: dict, counters_ext: dict, capped: list[str], hw_counters: dict) -> None:
        """Create the families this port has a sample for, those not created yet."""
        dicts = {"counters": counters, "counters_ext": counters_ext}
        for c in self.specs:
            if c.name in self.families:
                continue
            if any(dicts[source].get(file) is not None and file not in capped for source, file in c.sources):
                self.families[c.name] = self.out.family(c.name, c.help, COUNTER)
        if hw_counters and self.hw_family is None:
            self.hw_family = self.out.family(
                PREFIX + "port_hw_stat",
                "The port's hw_counters/ files (driver-specific counts)",
                COUNTER,
                extra="counter",
            )

    def finish(self) -> None:
        """Fill the families: a port without a counter (or with it capped) has no sample; where a
        family has several sources, the first with a value that is not capped."""
        labels, capped = self.labels, self.capped
        any_capped = any(capped)
        for c in self.specs:
            family = self.families.get(c.name)
            if family is None:
                continue
            (source, file), *others = c.sources
            values = list(map(methodcaller("get", file), self.sources[source]))
            if not any_capped and None not in values:
                family.labels, family.values = labels, values  # every port: share the labels column
                continue
            if not others:
                for port_labels, value, port_capped in zip(labels, values, capped, strict=True):
                    if value is not None and file not in port_capped:
                        family.labels.append(port_labels)
                        family.values.append(value)
                continue
            columns = [(file, values)]
            columns += [(f, list(map(methodcaller("get", f), self.sources[s]))) for s, f in others]
            for i, port_labels in enumerate(labels):
                port_capped = capped[i]
                for f, column in columns:
                    value = column[i]
                    if value is not None and f not in port_capped:
                        family.labels.append(port_labels)
                        family.values.append(value)
                        break
        if self.hw_family is not None:
            self._finish_hw(self.hw_family)

    def _finish_hw(self, hw: Family) -> None:
        orders: dict[tuple[str, ...], list[str]] = {}
        for port_labels, hw_counters in zip(self.labels, self.hw, strict=True):
            if not hw_counters:
                continue
            # The ports of a fabric mostly have the same files: sort each set of names once.
            names = tuple(hw_counters)
            order = orders.get(names)
            if order is None:
                order = orders[names] = sorted(n for n in names if n not in HW_NOT_COUNTERS)
            values = [hw_counters[n] for n in order]
            if set(map(type, values)) <= {int}:
                hw.labels.extend([port_labels] * len(order))
                hw.extras.extend(order)
                hw.values.extend(values)
                continue
            for counter, value in zip(order, values, strict=True):
                if isinstance(value, int):  # a file that read as text is no count
                    hw.add(port_labels, value, counter)
