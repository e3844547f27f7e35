"""The prometheus_client collector over the current-state tables: nodes, devices, ports, open events.

One pass over each table per scrape, nothing recomputed from samples. A value that is not
known (a capped or unreadable counter, the counters of a stale node or a vanished port) has
no sample rather than a made-up 0. Ports share one label dict across their series: at half
a million samples that is most of the memory a scrape needs, and the encoder renders each
shared dict once (fabricweb/exporter/encoder.py). The tables are read in tables.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

from prometheus_client.metrics_core import Metric

from collectors.pcie import usable_gbps
from fabricweb.api.freshness import is_stale, stale_after
from fabricweb.health import context

from . import tables
from .names import HW_NOT_COUNTERS, PHYS_STATE_HELP, PORT_COUNTERS, PREFIX, STATE_HELP
from .selection import Selection
from .series import COUNTER, Families, Family

BYTES_PER_GBIT = 1e9 / 8


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

    def _nodes(self, out: Families) -> tuple[dict[int, tuple[str, bool]], datetime | None]:
        """Node id -> (name, stale) for the selected nodes, and the newest ingest of any node."""
        nodes: dict[int, tuple[str, bool]] = {}
        newest = None
        if self.selection.health:
            up = out.family(PREFIX + "node_up", "1 while the node's snapshots arrive, 0 once it is stale")
            seen = out.family(
                PREFIX + "node_last_seen_timestamp_seconds", "When the node's last snapshot was stored (server clock)"
            )
        after = stale_after()
        for node_id, name, ingested in tables.nodes():
            if ingested is not None and (newest is None or ingested > newest):
                newest = ingested
            if not self.selection.wants(name):
                continue
            stale = is_stale(ingested, self.now, after)
            nodes[node_id] = (name, stale)
            if self.selection.health:
                labels = {"node": name}
                up.add(labels, 0 if stale else 1)
                if ingested is not None:
                    seen.add(labels, ingested.timestamp())
        return nodes, newest

    def _narrowed(self) -> bool:
        # Unselected rows are cheaper to skip in Python than to name in SQL, unless few are selected.
        return self.selection.shards > 1 or self.selection.node_glob is not None

    # -- devices -------------------------------------------------------------------

    def _devices(self, out: Families, nodes: dict[int, tuple[str, bool]]) -> dict[int, tuple]:
        """Device id -> (node name, device name, stale, row) for the devices of the selected nodes."""
        health, counters = self.selection.health, self.selection.counters
        rows = tables.devices(list(nodes) if self._narrowed() else None, counters)
        picked = sorted(
            ((nodes[r[1]][0], r[2], r) for r in rows if r[1] in nodes),
            key=lambda item: (item[0], item[1]),
        )
        devices: dict[int, tuple] = {}
        for node, name, row in picked:
            stale = nodes[row[1]][1]
            devices[row[0]] = (node, name, stale, row)
            labels = {"node": node, "device": name}
            if health:
                self._device_health(out, labels, row)
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
        info.add(info_labels, 1)
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
                out.family(PREFIX + name, help).add(labels, value)
        usable = usable_gbps(cur_gts, cur_width)
        if usable is not None:
            name = PREFIX + "device_pcie_bandwidth_bytes_per_second"
            help = "Usable bandwidth of the PCIe link as trained, after line encoding"
            out.family(name, help).add(labels, usable * BYTES_PER_GBIT)

    # -- ports ---------------------------------------------------------------------

    def _ports(self, out: Families, devices: dict[int, tuple]) -> dict[int, dict[str, str]]:
        """Every port of the selected devices: its series; returns port id -> its labels."""
        rows = tables.ports(list(devices) if self._narrowed() else None, self.selection.counters)
        order = {device_id: i for i, device_id in enumerate(devices)}
        picked = sorted((r for r in rows if r[1] in devices), key=lambda r: (order[r[1]], r[2]))
        labelled: dict[int, dict[str, str]] = {}
        health = PortHealth(out) if self.selection.health else None
        counters = PortCounters(out) if self.selection.counters else None
        for row in picked:
            node, device, stale, device_row = devices[row[1]]
            labels = {"node": node, "device": device, "port": str(row[2])}
            labelled[row[0]] = labels
            if health is not None:
                health.add(labels, row, device_row)
            vanished = row[13] is not None or device_row[10] is not None
            if counters is not None and not stale and not vanished:
                counters.add(labels, row)
        if counters is not None:
            counters.finish()
        return labelled

    # -- events --------------------------------------------------------------------

    def _events(self, out: Families, nodes: dict, devices: dict, ports: dict[int, dict[str, str]]) -> None:
        samples = out.family(
            PREFIX + "events_open", "Open health events by kind and severity, per port (device, node: empty labels)"
        )
        found = []
        for node_id, device_id, port_id, kind, severity, n in tables.open_events():
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


class PortHealth:
    """A port's state, link, expectation and capped counters: the rows of the health set."""

    GAUGES = (
        ("state_id", STATE_HELP),
        ("physical_state_id", PHYS_STATE_HELP),
        ("rate_bytes_per_second", "Maximum signal transfer rate"),
        ("port_up", "1 when the port is ACTIVE (or ACTIVE_DEFER) and still reported by its node"),
        ("port_degraded", "1 when the port is up and trained below its expected speed or width"),
        ("port_lanes", "Lanes the link trained at (the X of 4X)"),
        ("port_expected_lanes", "Lanes the link is expected to train at"),
    )

    def __init__(self, out: Families) -> None:
        self.out = out
        # Each gauge's family once created (on first use: the exposition's order), per scrape.
        self.gauges: list[Family | None] = [None] * len(self.GAUGES)

    def _gauge(self, i: int) -> Family:
        name, help = self.GAUGES[i]
        family = self.gauges[i] = self.out.family(PREFIX + name, help)
        return family

    def add(self, labels: dict[str, str], row: tuple, device_row: tuple) -> None:
        out = self.out
        (_, _, _, state_id, phys_id, link_layer, rate_gbps, lanes, speed, exp_speed, exp_lanes, exp_source,
         capped, _, up, degraded) = row[:16]  # fmt: skip
        rate = None if rate_gbps is None else rate_gbps * BYTES_PER_GBIT
        values = (state_id, phys_id, rate, int(up), int(degraded), lanes, exp_lanes)
        gauges = self.gauges
        for i, value in enumerate(values):
            if value is not None:
                family = gauges[i] or self._gauge(i)
                family.labels.append(labels)
                family.values.append(value)
        expected = context.rate(exp_speed, exp_lanes)
        if expected is not None:
            name = PREFIX + "port_expected_rate_bytes_per_second"
            help = "Signal transfer rate of the link the port is expected to train at"
            out.family(name, help).add(labels, expected.bytes_per_second)
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
        info.add(info_labels, 1)
        if capped:
            rows = out.family(
                PREFIX + "port_capped",
                "1 for a counter stuck at all-ones: its rate is unknown until reset",
                extra="counter",
            )
            for counter in capped:
                rows.add(labels, 1, counter)


class PortCounters:
    """The counters and hw_counters of the ports: the samples of the counter set, ~900,000 at
    20,000 ports, built a family at a time (one list comprehension per counter), not a sample
    at a time.

    The families are still created in the order a port-by-port pass would first use them
    (the exposition's order): when a port of a new shape (which counter files, which capped)
    comes by, the families it is the first to need are created there.
    """

    def __init__(self, out: Families) -> None:
        self.out = out
        # Per port, in order: its labels, counter dicts and capped counters.
        self.labels: list[dict[str, str]] = []
        self.sources: dict[str, list[dict]] = {"counters": [], "counters_ext": []}
        self.hw: list[dict] = []
        self.capped: list[list[str]] = []
        self.shapes: set[tuple] = set()
        self.families: dict[str, Family] = {}
        self.hw_family: Family | None = None

    def add(self, labels: dict[str, str], row: tuple) -> None:
        capped = row[12] or []
        counters, counters_ext, hw_counters = row[16] or {}, row[17] or {}, row[18] or {}
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
        for c in PORT_COUNTERS:
            value = (counters if c.source == "counters" else counters_ext).get(c.file)
            if value is not None and c.file not in capped and c.name not in self.families:
                self.families[c.name] = self.out.family(c.name, c.help, COUNTER)
        if hw_counters and self.hw_family is None:
            self.hw_family = self.out.family(
                PREFIX + "port_hw_stat",
                "The port's hw_counters/ files (driver-specific counts)",
                COUNTER,
                extra="counter",
            )

    def finish(self) -> None:
        """Fill the families: a port without a counter (or with it capped) has no sample."""
        labels, capped = self.labels, self.capped
        any_capped = any(capped)
        for c in PORT_COUNTERS:
            family = self.families.get(c.name)
            if family is None:
                continue
            file = c.file
            values = [source.get(file) for source in self.sources[c.source]]
            if not any_capped and None not in values:
                family.labels, family.values = labels, values  # every port: share the labels column
                continue
            for port_labels, value, port_capped in zip(labels, values, capped, strict=True):
                if value is not None and file not in port_capped:
                    family.labels.append(port_labels)
                    family.values.append(value)
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
