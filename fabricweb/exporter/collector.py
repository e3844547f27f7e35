"""The prometheus_client collector over the current-state tables: nodes, devices, ports, open events.

One pass over each table per scrape, nothing recomputed from samples. A value that is not
known (a capped or unreadable counter, the counters of a stale node or a vanished port, the
state of a stale node's port, the rate of a port with no link) has no sample rather than a
made-up value. Up, degraded, whether a port has a link and whether a node is stale are
fabricweb.inventory.portfacts' (docs/metrics.md, "Unknown is absent"). Ports share one label
dict across their series: at half a million samples that is most of the memory a scrape needs,
and the encoder renders each shared dict once (fabricweb/exporter/encoder.py). The tables are read in tables.py.

The health series of ports and devices are built from groups memoised across scrapes,
keyed by the values they are made of (grouped.py): per scrape, a port's health is a key. What a key
gives is built in hostports.py (a host's ports and devices), switchports.py (a switch's ports) and
links.py (the links), the families they fill are specs.py's; the counters are counters.py's.

Nodes are hosts, switches or fabric collectors (fabricweb.inventory.models.Node.Kind), each in
families of its own: a host's ports in node_exporter's families (`node, device, port`), a switch's
in `infiniband_switch_port_*` (`guid, port, switch`), a collector in `infiniband_fabric_collector_*`.
Links (`infiniband_link_*`) come from the end that speaks for a cable (Port.link_owner), both ends named in
their labels: in the default set only the cables a switch port speaks for (a host's own link is its port's
series), in ?set=detail every cable the fabric view has seen.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import datetime

from prometheus_client.metrics_core import Metric

from fabricweb.inventory.models import Node

from . import congestion, jobseries, nodeblocks, tables
from .congestion import Congestion
from .counters import PortCounters
from .grouped import Grouped
from .hostports import device_memo, device_pcie_memo, gpu_relations, port_detail_memo, port_memo
from .links import link_detail_memo, link_memo
from .names import HOST_COUNTERS, HW_NOT_COUNTERS, PREFIX, SWITCH_COUNTERS
from .selection import Selection
from .series import COUNTER, Families
from .specs import (
    DEVICE_PCIE_SPECS,
    DEVICE_SPECS,
    GPU_NIC_RELATION,
    LINK_DETAIL_SPECS,
    LINK_SPECS,
    PORT_DETAIL_SPECS,
    PORT_SPECS,
    SWITCH_PORT_SPECS,
)
from .switchports import switch_port_memo

SWITCH, COLLECTOR = Node.Kind.SWITCH.value, Node.Kind.COLLECTOR.value
# The health rows kept across scrapes, each by the module that builds them (bench/ clears them all).
MEMOS = (port_memo, port_detail_memo, device_memo, device_pcie_memo, switch_port_memo, link_memo, link_detail_memo)
VANISHED = tables.DEVICE_FIELDS.index("vanished_at")  # in a device row; its hw_counters follow DEVICE_FIELDS


class FabricCollector:
    """What /metrics shows for one scrape: `selection` of the fabric as stored at `now`.

    A prometheus_client collector (`collect()`); `families()` gives the same series as columns
    for fabricweb/exporter/encoder.py.
    """

    def __init__(self, selection: Selection, now: datetime) -> None:
        self.selection = selection
        self.now = now
        # The health rows' Groupeds of the last _devices and _ports, by kind of row (nodeblocks.KINDS).
        self.grouped: dict[str, Grouped | None] = {}
        # Every node's (id, name, kind), in name order: what the far ends of links are named by (nodeblocks).
        self.names: tuple[tuple[int, str, str], ...] = ()

    def collect(self) -> Iterator[Metric]:
        for family in self.families():
            yield family.to_metric()

    def families(self) -> Families:
        started = time.perf_counter()
        out = Families()
        nodes, newest = self._nodes(out)
        served = nodeblocks.NodeBlocks(self).read(out, nodes) if nodeblocks.serves(self.selection) else None
        if served is not None:
            devices, ports = served
        else:
            devices = self._devices(out, nodes)
            ports = self._ports(out, devices)
        if self.selection.health:
            self._events(out, nodes, devices, ports)
            jobseries.link_jobs(out, self.selection)
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
            refused = out.family(
                PREFIX + "node_refused",
                "1 while the host's snapshots are refused over its budget (FABRIC_NODE_MAX_*: docs/ingest.md)",
            )
        switches, collectors, names = [], [], []
        for node_id, name, ingested, kind, guid, stale, refusal in tables.nodes():
            names.append((node_id, name, kind))
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
                refused.add(labels, 1 if refusal else 0)
                if ingested is not None:
                    seen.add(labels, ingested.timestamp())
        self.names = tuple(names)
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

    def _devices(
        self, out: Families, nodes: dict[int, tuple[str, bool, str | None]], rows: Iterable[tuple] | None = None
    ) -> dict[int, tuple]:
        """Device id -> (node name, device name, stale, row, serial and key of its health row
        (None without the health or detail set, and for a switch), switch GUID or None) for the devices of
        the selected nodes (of `rows` when given: tables.devices'). A switch's one device has no series of its
        own: its switch has."""
        selection = self.selection
        health = Grouped(out, DEVICE_SPECS, device_memo) if selection.health else None
        pcie = Grouped(out, DEVICE_PCIE_SPECS, device_pcie_memo) if selection.pcie else None
        self.grouped = {"devices": health} if health is not None else {}
        if rows is None:
            rows = tables.devices(list(nodes) if self._narrowed() else None, selection.hw)
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
            # What the device's series are made of: names, firmware, HCA type, board id, PCIe link and path.
            device_key = (node, name, *row[3:VANISHED])
            serial, labels = None, {"node": node, "device": name}
            if health is not None:
                serial, labels = health.add(device_key)
            if pcie is not None:
                pcie.add(device_key)
            devices[row[0]] = (node, name, stale, row, serial, device_key, None)
            if selection.hw and not stale and row[VANISHED] is None and row[VANISHED + 1]:
                hw = out.family(
                    PREFIX + "device_hw_stat",
                    "The device's hw_counters/ files (driver-specific counts)",
                    COUNTER,
                    extra="counter",
                )
                for counter, value in sorted(row[VANISHED + 1].items()):
                    if isinstance(value, int) and counter not in HW_NOT_COUNTERS:
                        hw.add(labels, value, counter)
        for grouped in (health, pcie):
            if grouped is not None:
                grouped.finish()
        if pcie is not None:
            self._gpu_relations(out, nodes)
        return devices

    def _gpu_relations(self, out: Families, nodes: dict[int, tuple[str, bool, str | None]]) -> None:
        """?set=pcie: each GPU's relation to each RDMA device of its host (Node.gpus)."""
        family = out.family(*GPU_NIC_RELATION)
        sent = tables.gpus([node_id for node_id, (_, _, guid) in nodes.items() if guid is None])
        for node_id in sorted(sent, key=lambda n: nodes[n][0]):
            for labels in gpu_relations(nodes[node_id][0], sent[node_id]):
                family.add(labels, 1)

    # -- ports ---------------------------------------------------------------------

    def _ports(self, out: Families, devices: dict[int, tuple], rows: Iterable[tuple] | None = None) -> dict[int, tuple]:
        """Every port of the selected devices (of `rows` when given: tables.ports'): its series, and its link's
        where it speaks for one; returns port id -> (node, device, port number, switch GUID or None)."""
        selection = self.selection
        counters = selection.counters or selection.hw
        if rows is None:
            rows = tables.ports(list(devices) if self._narrowed() else None, counters, selection.hw)
        order = {device_id: i for i, device_id in enumerate(devices)}
        picked = sorted((r for r in rows if r[1] in devices), key=lambda r: (order[r[1]], r[2]))
        where: dict[int, tuple] = {}
        health = Grouped(out, PORT_SPECS, port_memo) if selection.health else None
        detail = Grouped(out, PORT_DETAIL_SPECS, port_detail_memo) if selection.detail else None
        switch_health = Grouped(out, SWITCH_PORT_SPECS, switch_port_memo) if selection.health else None
        links = None
        if selection.health:
            links = Grouped(out, LINK_SPECS, link_memo)
        elif selection.detail:
            links = Grouped(out, LINK_DETAIL_SPECS, link_detail_memo)
        if health is not None:
            self.grouped.update(ports=health, switch_ports=switch_health, links=links)
        port_counters = switch_counters = congested = switch_congested = None
        if counters:
            # ?set=hw: the hw_counters/ files alone; the default set: the counters node_exporter has.
            port_counters = PortCounters(out, HOST_COUNTERS if selection.counters else (), hw=selection.hw)
            if selection.counters:
                switch_counters = PortCounters(out, SWITCH_COUNTERS, hw=False)
                # The share of link time lost, from the same readings (its wait): congestion.py.
                congested, switch_congested = Congestion(out, congestion.HOST), Congestion(out, congestion.SWITCH)
        for row in picked:
            node, device, stale, device_row, device_serial, device_key, guid = devices[row[1]]
            where[row[0]] = (node, device, row[2], guid)
            vanished = row[3] is not None or device_row[VANISHED] is not None
            if guid is None:
                labels = None
                # Exactly what port_health() reads: the device's key (names, firmware, HCA type) by its
                # health row's serial, the port number, rate, the database's JSON of the rest, and whether
                # its node is stale (then its state is unknown: no sample says it).
                key = (device_serial, row[2], row[4], row[5], stale)
                if health is not None:
                    _, labels = health.add(key, device_key)
                if detail is not None:
                    _, labels = detail.add((device_key, *key[1:]), device_key)
                if labels is None:
                    labels = {"node": node, "device": device, "port": str(row[2])}
                if port_counters is not None and not stale and not vanished:
                    port_counters.add(labels, row)
                    if congested is not None:
                        congested.add(labels, row, device_row)
            else:
                if switch_health is not None:
                    _, labels = switch_health.add(((node, guid), row[2], row[4], row[5]))
                else:
                    labels = {"guid": guid, "port": str(row[2]), "switch": node}
                if switch_counters is not None and not vanished:  # an unreachable switch: its last values
                    switch_counters.add(labels, row)
                    switch_congested.add(labels, row, device_row)
            # A host's own link has no default series (links.link_health): its port's say it.
            if links is not None and row[6] and (guid is not None or selection.detail):
                links.add(((node, device, guid is not None), row[2], row[4], row[5]))
        for grouped in (health, detail, switch_health, links, port_counters, switch_counters):
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
