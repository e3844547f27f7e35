"""The prometheus_client collector over the current-state tables: nodes, devices, ports, open events.

One pass over each table per scrape, nothing recomputed from samples. A value that is not
known (a capped or unreadable counter, the counters of a stale node or a vanished port) has
no sample rather than a made-up 0. Ports share one label dict across their series: at half
a million samples that is most of the memory a scrape needs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from collectors.pcie import usable_gbps
from fabricweb.api.freshness import is_stale
from fabricweb.api.linkstate import annotate
from fabricweb.health import context
from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Node, Port

from .names import HW_NOT_COUNTERS, PHYS_STATE_HELP, PORT_COUNTERS, PREFIX, STATE_HELP
from .selection import Selection

GAUGE, COUNTER = "gauge", "counter"
BYTES_PER_GBIT = 1e9 / 8

# Port fields every set reads; the JSON counter fields only when counters are asked for.
PORT_FIELDS = (
    "id", "device_id", "number", "state_id", "phys_state_id", "link_layer", "rate_gbps", "lanes", "speed",
    "expected_speed", "expected_lanes", "expected_source", "capped", "vanished_at", "api_up", "api_degraded",
)  # fmt: skip
PORT_COUNTER_FIELDS = ("counters", "counters_ext", "hw_counters")
DEVICE_FIELDS = (
    "id", "node_id", "name", "fw_ver", "hca_type", "board_id",
    "pci_current_gts", "pci_current_width", "pci_max_gts", "pci_max_width", "vanished_at",
)  # fmt: skip


class Families:
    """Metric families in the order first used, each a plain list of samples."""

    def __init__(self) -> None:
        self._families: dict[str, Metric] = {}

    def family(self, name: str, help: str, typ: str = GAUGE) -> list[Sample]:
        metric = self._families.get(name)
        if metric is None:
            metric = self._families[name] = Metric(name, help, typ)
        return metric.samples

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())

    def sample_count(self) -> int:
        return sum(len(m.samples) for m in self._families.values())


def _sample(samples: list[Sample], name: str, labels: dict[str, str], value: float) -> None:
    samples.append(Sample(name, labels, float(value)))


class FabricCollector:
    """What /metrics shows for one scrape: `selection` of the fabric as stored at `now`."""

    def __init__(self, selection: Selection, now: datetime) -> None:
        self.selection = selection
        self.now = now

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        out = Families()
        nodes, newest = self._nodes(out)
        devices = self._devices(out, nodes)
        ports = self._ports(out, devices)
        if self.selection.health:
            self._events(out, nodes, devices, ports)
        # Timed before the first family is yielded: the encoder runs while this generator waits.
        seconds = time.perf_counter() - started
        yield from out
        yield from self._self_metrics(out.sample_count(), seconds, newest)

    # -- nodes ---------------------------------------------------------------------

    def _nodes(self, out: Families) -> tuple[dict[int, tuple[str, bool]], datetime | None]:
        """Node id -> (name, stale) for the selected nodes, and the newest ingest of any node."""
        nodes: dict[int, tuple[str, bool]] = {}
        newest = None
        rows = Node.objects.order_by("name").values_list("id", "name", "last_ingested_at")
        if self.selection.health:
            up = out.family(PREFIX + "node_up", "1 while the node's snapshots arrive, 0 once it is stale")
            seen = out.family(
                PREFIX + "node_last_seen_timestamp_seconds", "When the node's last snapshot was stored (server clock)"
            )
        for node_id, name, ingested in rows:
            if ingested is not None and (newest is None or ingested > newest):
                newest = ingested
            if not self.selection.wants(name):
                continue
            stale = is_stale(ingested, self.now)
            nodes[node_id] = (name, stale)
            if self.selection.health:
                labels = {"node": name}
                _sample(up, PREFIX + "node_up", labels, 0 if stale else 1)
                if ingested is not None:
                    _sample(seen, PREFIX + "node_last_seen_timestamp_seconds", labels, ingested.timestamp())
        return nodes, newest

    # -- devices -------------------------------------------------------------------

    def _devices(self, out: Families, nodes: dict[int, tuple[str, bool]]) -> dict[int, tuple]:
        """Device id -> (node name, device name, stale, row) for the devices of the selected nodes."""
        fields = DEVICE_FIELDS + (("hw_counters",) if self.selection.counters else ())
        rows = Device.objects.order_by().values_list(*fields)
        if self.selection.shards > 1 or self.selection.node_glob:
            rows = rows.filter(node_id__in=list(nodes))
        picked = sorted(
            ((nodes[r[1]][0], r[2], r) for r in rows if r[1] in nodes),
            key=lambda item: (item[0], item[1]),
        )
        devices: dict[int, tuple] = {}
        health, counters = self.selection.health, self.selection.counters
        for node, name, row in picked:
            stale = nodes[row[1]][1]
            devices[row[0]] = (node, name, stale, row)
            labels = {"node": node, "device": name}
            if health:
                self._device_health(out, labels, row)
            if counters and not stale and row[10] is None and row[11]:
                hw = out.family(
                    PREFIX + "device_hw_stat", "The device's hw_counters/ files (driver-specific counts)", COUNTER
                )
                for counter, value in sorted(row[11].items()):
                    if isinstance(value, int) and counter not in HW_NOT_COUNTERS:
                        _sample(hw, PREFIX + "device_hw_stat_total", {**labels, "counter": counter}, value)
        return devices

    def _device_health(self, out: Families, labels: dict[str, str], row: tuple) -> None:
        _, _, _, fw_ver, hca_type, board_id, cur_gts, cur_width, max_gts, max_width, _ = row[:11]
        info = out.family(PREFIX + "info", "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.")
        info_labels = {
            "board_id": board_id or "",
            **labels,
            "firmware_version": fw_ver or "",
            "hca_type": hca_type or "",
        }
        _sample(info, PREFIX + "info", info_labels, 1)
        pcie = (
            ("device_pcie_link_speed_gts", "PCIe link speed the HCA trained at, GT/s per lane", cur_gts),
            ("device_pcie_link_width_lanes", "PCIe lanes the HCA trained at", cur_width),
            (
                "device_pcie_max_link_speed_gts",
                "PCIe link speed the HCA and slot are capable of, GT/s per lane",
                max_gts,
            ),
            ("device_pcie_max_link_width_lanes", "PCIe lanes the HCA and slot are capable of", max_width),
        )
        for name, help, value in pcie:
            if value is not None:
                _sample(out.family(PREFIX + name, help), PREFIX + name, labels, value)
        usable = usable_gbps(cur_gts, cur_width)
        if usable is not None:
            name = PREFIX + "device_pcie_bandwidth_bytes_per_second"
            help = "Usable bandwidth of the PCIe link as trained, after line encoding"
            _sample(out.family(name, help), name, labels, usable * BYTES_PER_GBIT)

    # -- ports ---------------------------------------------------------------------

    def _ports(self, out: Families, devices: dict[int, tuple]) -> dict[int, dict[str, str]]:
        """Every port of the selected devices: its series; returns port id -> its labels."""
        fields = PORT_FIELDS + (PORT_COUNTER_FIELDS if self.selection.counters else ())
        rows = annotate(Port.objects.order_by()).values_list(*fields)
        if self.selection.shards > 1 or self.selection.node_glob:
            rows = rows.filter(device_id__in=list(devices))
        order = {device_id: i for i, device_id in enumerate(devices)}
        picked = sorted((r for r in rows if r[1] in devices), key=lambda r: (order[r[1]], r[2]))
        labelled: dict[int, dict[str, str]] = {}
        for row in picked:
            node, device, stale, device_row = devices[row[1]]
            labels = {"node": node, "device": device, "port": str(row[2])}
            labelled[row[0]] = labels
            if self.selection.health:
                self._port_health(out, labels, row, device_row)
            vanished = row[13] is not None or device_row[10] is not None
            if self.selection.counters and not stale and not vanished:
                self._port_counters(out, labels, row)
        return labelled

    def _port_health(self, out: Families, labels: dict[str, str], row: tuple, device_row: tuple) -> None:
        (_, _, _, state_id, phys_id, link_layer, rate_gbps, lanes, speed, exp_speed, exp_lanes, exp_source,
         capped, _, up, degraded) = row[:16]  # fmt: skip
        rate = None if rate_gbps is None else rate_gbps * BYTES_PER_GBIT
        gauges = (
            ("state_id", STATE_HELP, state_id),
            ("physical_state_id", PHYS_STATE_HELP, phys_id),
            ("rate_bytes_per_second", "Maximum signal transfer rate", rate),
            ("port_up", "1 when the port is ACTIVE (or ACTIVE_DEFER) and still reported by its node", int(up)),
            ("port_degraded", "1 when the port is up and trained below its expected speed or width", int(degraded)),
            ("port_lanes", "Lanes the link trained at (the X of 4X)", lanes),
            ("port_expected_lanes", "Lanes the link is expected to train at", exp_lanes),
        )  # fmt: skip
        for name, help, value in gauges:
            if value is not None:
                _sample(out.family(PREFIX + name, help), PREFIX + name, labels, value)
        expected = context.rate(exp_speed, exp_lanes)
        if expected is not None:
            name = PREFIX + "port_expected_rate_bytes_per_second"
            help = "Signal transfer rate of the link the port is expected to train at"
            _sample(out.family(name, help), name, labels, expected.bytes_per_second)
        info = out.family(PREFIX + "port_info", "The port's link and what is expected of it, value is always 1")
        info_labels = {
            **labels,
            "link_layer": link_layer or "",
            "speed": speed or "",
            "width": f"{lanes}X" if lanes else "",
            "expected_speed": exp_speed or "",
            "expected_width": f"{exp_lanes}X" if exp_lanes else "",
            "expected_source": exp_source or "",
            "hca_type": device_row[4] or "",
            "firmware_version": device_row[3] or "",
        }
        _sample(info, PREFIX + "port_info", info_labels, 1)
        if capped:
            samples = out.family(
                PREFIX + "port_capped", "1 for a counter stuck at all-ones: its rate is unknown until reset"
            )
            for counter in capped:
                _sample(samples, PREFIX + "port_capped", {**labels, "counter": counter}, 1)

    def _port_counters(self, out: Families, labels: dict[str, str], row: tuple) -> None:
        capped = row[12]
        counters, counters_ext, hw_counters = row[16:19]
        for c in PORT_COUNTERS:
            value = (counters if c.source == "counters" else counters_ext).get(c.file)
            if value is None or (capped and c.file in capped):
                continue
            _sample(out.family(c.name, c.help, COUNTER), c.name + "_total", labels, value)
        if hw_counters:
            hw = out.family(PREFIX + "port_hw_stat", "The port's hw_counters/ files (driver-specific counts)", COUNTER)
            for counter, value in sorted(hw_counters.items()):
                if isinstance(value, int) and counter not in HW_NOT_COUNTERS:
                    _sample(hw, PREFIX + "port_hw_stat_total", {**labels, "counter": counter}, value)

    # -- events --------------------------------------------------------------------

    def _events(self, out: Families, nodes: dict, devices: dict, ports: dict[int, dict[str, str]]) -> None:
        samples = out.family(
            PREFIX + "events_open", "Open health events by kind and severity, per port (device, node: empty labels)"
        )
        rows = (
            Event.objects.filter(resolved_at__isnull=True)
            .order_by()
            .values_list("node_id", "device_id", "port_id", "kind", "severity")
            .annotate(n=Count("id"))
        )
        found = []
        for node_id, device_id, port_id, kind, severity, n in rows:
            if node_id not in nodes:
                continue
            if port_id is not None:
                where = ports.get(port_id)
            elif device_id is not None:
                where = (
                    {"node": devices[device_id][0], "device": devices[device_id][1], "port": ""}
                    if device_id in devices
                    else None
                )
            else:
                where = {"node": nodes[node_id][0], "device": "", "port": ""}
            if where is not None:
                found.append(({**where, "kind": kind, "severity": severity}, n))
        found.sort(key=lambda item: tuple(item[0].values()))
        for labels, n in found:
            _sample(samples, PREFIX + "events_open", labels, n)

    # -- the exporter itself --------------------------------------------------------

    def _self_metrics(self, samples: int, seconds: float, newest: datetime | None) -> Iterator[Metric]:
        own = Families()
        name = "fabricweb_exporter_collect_seconds"
        _sample(own.family(name, "Time this scrape spent reading the tables, before encoding"), name, {}, seconds)
        name = "fabricweb_exporter_samples"
        _sample(own.family(name, "Samples in this scrape, these self-metrics aside"), name, {}, samples)
        if newest is not None:
            name = "fabricweb_exporter_last_ingest_age_seconds"
            help = "Seconds since the newest snapshot of any node was stored"
            _sample(own.family(name, help), name, {}, max(0.0, (self.now - newest).total_seconds()))
        yield from own
