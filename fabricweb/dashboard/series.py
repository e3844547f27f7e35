"""One port's history as chart series: raw samples for short ranges, 5-minute and 1-hour rollups for long ones.

Rates are per second for traffic (bytes/s, packets/s), per hour for error counters
(operators count `symbol errors/h`), congestion as the share of time in port_xmit_wait.
Unknown is None (a gap in the chart), never 0; a missing poll or bucket inserts a None
point, so a gap shows as a gap and not as a line across it. The link and its capacity are
fabricweb.inventory.portfacts': a port (or a poll) without a link has none, so no capacity line is drawn
for a port that is down, whatever its `rate` file says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from collectors import facts
from fabricweb.health import context
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port
from fabricweb.isotime import iso
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.models import PortRollup
from fabricweb.telemetry.storage.columns import ERRORS


@dataclass(frozen=True, slots=True)
class Range:
    name: str
    span: timedelta
    period_s: int | None  # None: raw samples

    @property
    def source(self) -> str:
        return {None: "raw samples", PortRollup.FIVE_MINUTES: "5-minute rollups", PortRollup.HOUR: "1-hour rollups"}[
            self.period_s
        ]


RANGES = {
    r.name: r
    for r in (
        Range("1h", timedelta(hours=1), None),
        Range("6h", timedelta(hours=6), None),
        Range("24h", timedelta(hours=24), PortRollup.FIVE_MINUTES),
        Range("7d", timedelta(days=7), PortRollup.FIVE_MINUTES),
        Range("30d", timedelta(days=30), PortRollup.HOUR),
    )
}
GAP_FACTOR = 2.5  # a step this many times the expected one is a gap
ERROR_COLUMNS = tuple(ERRORS)  # symbol_error, link_downed, ...
FIELDS = ("rcv_bytes", "xmit_bytes", "rcv_packets", "xmit_packets", "xmit_wait", *ERROR_COLUMNS)


def _gbps(link: portfacts.Link | None) -> tuple[float | None, str | None]:
    if link is None or link.name is None:
        return None, None
    return link.gbps, link.name


class _Series:
    def __init__(self) -> None:
        self.t: list[str] = []
        self.values: dict[str, list] = {k: [] for k in ("rx", "tx", "rx_pps", "tx_pps", "congestion_pct")}
        self.errors: dict[str, list] = {c: [] for c in ERROR_COLUMNS}
        self.link_gbps: list = []
        self.link_name: list = []
        self.resets: list[str] = []
        self.capped: list[str] = []
        self.last: datetime | None = None

    def gap_before(self, ts: datetime, step_s: float) -> None:
        if self.last is not None and (ts - self.last).total_seconds() > GAP_FACTOR * step_s:
            self.add(self.last + (ts - self.last) / 2, None, {}, None)

    def add(self, ts: datetime, seconds: float | None, deltas: dict, link: portfacts.Link | None) -> None:
        self.t.append(iso(ts))
        self.last = ts
        usable = seconds is not None and seconds > 0

        def rate(column: str, scale: float = 1.0):
            value = deltas.get(column)
            return value * scale / seconds if usable and value is not None else None

        self.values["rx"].append(rate("rcv_bytes"))
        self.values["tx"].append(rate("xmit_bytes"))
        self.values["rx_pps"].append(rate("rcv_packets"))
        self.values["tx_pps"].append(rate("xmit_packets"))
        tick_s = context.thresholds().xmit_wait_tick_ns * 1e-9
        share = rate("xmit_wait", tick_s * 100)
        self.values["congestion_pct"].append(None if share is None else min(share, 100.0))
        for column in ERROR_COLUMNS:
            self.errors[column].append(rate(column, 3600.0))
        gbps, name = _gbps(link) if deltas else (None, None)
        self.link_gbps.append(gbps)
        self.link_name.append(name)


def port_series(port: Port, wanted: Range, now: datetime) -> dict:
    since = now - wanted.span
    out = _Series()
    poll = float(settings.FABRIC_POLL_INTERVAL)
    layer = port.link_layer
    if wanted.period_s is None:
        for sample in samples.of_port(port, since):
            out.gap_before(sample.ts, poll)
            link = portfacts.sample_link(sample.state_id, sample.phys_state_id, sample.speed, sample.lanes, layer)
            out.add(sample.ts, sample.interval_s, sample.deltas(), link)
            if sample.reset:
                out.resets.append(iso(sample.ts))
            if sample.capped:
                out.capped.append(iso(sample.ts))
    else:
        rows = (
            PortRollup.objects.filter(port=port, period_s=wanted.period_s, bucket__gte=since)
            .order_by("bucket")
            .values(
                "bucket", "samples", "worst_state_id", "min_speed", "min_lanes", "resets", "capped_samples", *FIELDS
            )
        )
        for row in rows:
            out.gap_before(row["bucket"], wanted.period_s)
            covered = min(float(wanted.period_s), row["samples"] * poll) if row["samples"] else None
            # The slowest link of the bucket, when every poll of it had one (a bucket with a DOWN poll: none).
            up = facts.is_up(row["worst_state_id"])
            link = portfacts.named_link(row["min_speed"], row["min_lanes"], None, layer) if up else None
            out.add(row["bucket"], covered, row, link)
            if row["resets"]:
                out.resets.append(iso(row["bucket"]))
            if row["capped_samples"]:
                out.capped.append(iso(row["bucket"]))
    capacity, link_name = _gbps(portfacts.link(port))
    expected, expected_name = _gbps(portfacts.expected_link(port))
    return {
        "range": wanted.name,
        "source": wanted.source,
        "since": iso(since),
        "until": iso(now),
        "t": out.t,
        **out.values,
        "errors": out.errors,
        "link_gbps": out.link_gbps,
        "link_name": out.link_name,
        "capacity_bytes_per_second": None if capacity is None else capacity * 1e9 / 8,
        "link": link_name,
        "expected_gbps": expected,
        "expected": expected_name,
        "resets": out.resets,
        "capped": out.capped,
    }
