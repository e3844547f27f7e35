"""One port's history as chart series: raw samples for short ranges, 5-minute and 1-hour rollups for long ones,
and past the newest rollup the finer data that is not rolled yet (the newest raw samples), so a 24 h chart
reaches now.

Rates are per second for traffic (Gb/s, the unit a link is named in, and packets/s), per hour for error
counters (operators count `symbol errors/h`), congestion as the share of the link's time lost waiting for credits
(collectors.xmitwait.congestion_ratio: port_xmit_wait in the bytes one count is on the port's device, over the
sample's link and seconds; the congestion rule and /metrics use the same).
Unknown is None (a gap in the chart), never 0; a missing poll or bucket inserts a None
point, so a gap shows as a gap and not as a line across it. The link and its capacity are
fabricweb.inventory.portfacts': a port (or a poll) without a link has none, so no capacity line is drawn
where the port was down, whatever its `rate` file says.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from collectors import facts, xmitwait
from fabricweb.health.records import context
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port
from fabricweb.isotime import iso
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.models import PortRollup
from fabricweb.telemetry.storage.columns import ERRORS

from .timerange import RANGES, Range, Window, first_data

__all__ = ["RANGES", "Range", "Window", "port_series"]

GAP_FACTOR = 2.5  # a step this many times the expected one is a gap
ERROR_COLUMNS = tuple(ERRORS)  # symbol_error, link_downed, ...
FIELDS = ("rcv_bytes", "xmit_bytes", "rcv_packets", "xmit_packets", "xmit_wait", *ERROR_COLUMNS)
# The error counters in the groups an operator reads them by, one small chart each.
ERROR_GROUPS = (
    ("Symbol and link errors", ("symbol_error", "local_link_integrity_errors", "excessive_buffer_overrun_errors")),
    (
        "Receive errors",
        (
            "port_rcv_errors",
            "port_rcv_remote_physical_errors",
            "port_rcv_switch_relay_errors",
            "port_rcv_constraint_errors",
        ),
    ),
    ("Discards", ("port_xmit_discards", "port_xmit_constraint_errors", "vl15_dropped")),
    ("Link events", ("link_downed", "link_error_recovery")),
)
assert sorted(c for _, cs in ERROR_GROUPS for c in cs) == sorted(ERROR_COLUMNS), "every error counter in one group"
GBPS = 8 / 1e9  # bytes/s to Gb/s


def _gbps(link: portfacts.Link | None) -> tuple[float | None, str | None]:
    if link is None or link.name is None:
        return None, None
    return link.gbps, link.name


class _Series:
    def __init__(self, device: int | None = None) -> None:
        self.device = device  # NodeInfo.DeviceID: what one port_xmit_wait count is (collectors.xmitwait)
        self.t: list[str] = []
        self.values: dict[str, list] = {k: [] for k in ("rx", "tx", "rx_pps", "tx_pps", "congestion_pct")}
        self.errors: dict[str, list] = {c: [] for c in ERROR_COLUMNS}
        self.link_gbps: list = []
        self.link_name: list = []
        self.resets: list[str] = []
        self.capped: list[str] = []
        self.last: datetime | None = None
        self.first: datetime | None = None

    def gap_before(self, ts: datetime, step_s: float) -> None:
        if self.last is not None and (ts - self.last).total_seconds() > GAP_FACTOR * step_s:
            self.add(self.last + (ts - self.last) / 2, None, {}, None)

    def add(self, ts: datetime, seconds: float | None, deltas: dict, link: portfacts.Link | None) -> None:
        self.t.append(iso(ts))
        self.last = ts
        self.first = self.first or ts
        usable = seconds is not None and seconds > 0

        def rate(column: str, scale: float = 1.0):
            value = deltas.get(column)
            return value * scale / seconds if usable and value is not None else None

        self.values["rx"].append(rate("rcv_bytes"))
        self.values["tx"].append(rate("xmit_bytes"))
        self.values["rx_pps"].append(rate("rcv_packets"))
        self.values["tx_pps"].append(rate("xmit_packets"))
        # Not capped at 100%: above it the unit does not fit the device, and the chart shows that.
        lost = link_rate(link)
        share = xmitwait.congestion_ratio(deltas.get("xmit_wait"), self.device, lost, seconds) if usable else None
        self.values["congestion_pct"].append(None if share is None else share * 100)
        for column in ERROR_COLUMNS:
            self.errors[column].append(rate(column, 3600.0))
        gbps, name = _gbps(link) if deltas else (None, None)
        self.link_gbps.append(gbps)
        self.link_name.append(name)


def link_rate(link: portfacts.Link | None):
    """The sample's link as a Rate (collectors.link), None without one."""
    return None if link is None else context.rate(link.speed, link.lanes)


def _raw(out: _Series, port: Port, since: datetime, until: datetime | None, step_s: float) -> datetime | None:
    """The port's raw samples in [since, until); returns the first one's time (None: none)."""
    first = None
    poll = float(settings.FABRIC_POLL_INTERVAL)
    layer = port.link_layer
    for sample in samples.of_port(port, since, until):
        out.gap_before(sample.ts, step_s)
        step_s = poll
        link = portfacts.sample_link(sample.state_id, sample.phys_state_id, sample.speed, sample.lanes, layer)
        out.add(sample.ts, sample.interval_s, sample.deltas(), link)
        first = first or sample.ts
        if sample.reset:
            out.resets.append(iso(sample.ts))
        if sample.capped:
            out.capped.append(iso(sample.ts))
    return first


def _rolled(out: _Series, port: Port, period_s: int, since: datetime, until: datetime, step_s: float) -> datetime:
    """The port's buckets of `period_s` in [since, until); returns where the last one ends (since: none)."""
    poll = float(settings.FABRIC_POLL_INTERVAL)
    layer = port.link_layer
    rows = (
        PortRollup.objects.filter(port=port, period_s=period_s, bucket__gte=since, bucket__lt=until)
        .order_by("bucket")
        .values("bucket", "samples", "worst_state_id", "min_speed", "min_lanes", "resets", "capped_samples", *FIELDS)
    )
    end = since
    for row in rows:
        out.gap_before(row["bucket"], step_s)
        step_s = period_s
        covered = min(float(period_s), row["samples"] * poll) if row["samples"] else None
        # The slowest link of the bucket, when every poll of it had one (a bucket with a DOWN poll: none).
        up = facts.is_up(row["worst_state_id"])
        link = portfacts.named_link(row["min_speed"], row["min_lanes"], None, layer) if up else None
        out.add(row["bucket"], covered, row, link)
        if row["resets"]:
            out.resets.append(iso(row["bucket"]))
        if row["capped_samples"]:
            out.capped.append(iso(row["bucket"]))
        end = row["bucket"] + timedelta(seconds=period_s)
    return end


def _error_groups(errors: dict[str, list]) -> list[dict]:
    """The groups, each with its counters: those that counted in the range first (most first), then the rest."""

    def total(column: str) -> float:
        return sum(v for v in errors[column] if v)

    return [
        {
            "title": title,
            "counters": [
                # slot: its place in the group, so it keeps its colour when the order changes
                {"column": c, "name": ERRORS[c], "nonzero": total(c) > 0, "slot": columns.index(c)}
                for c in sorted(columns, key=lambda c: (total(c) <= 0, -total(c)))
            ],
        }
        for title, columns in ERROR_GROUPS
    ]


def _empty_message(first: datetime | None, until: datetime) -> str:
    if first is None:
        return "no data yet: the fabric has not been polled"
    if until <= first:
        return f"no data in this range: monitored since {first:%Y-%m-%d %H:%M} UTC"
    return "no samples of this port in this range"


def axis_start(port_start: datetime, wanted: Window) -> datetime:
    """The range's start; for a named range, where the port's data starts if later (the axis at least a
    minute long)."""
    if not wanted.live or port_start <= wanted.since:
        return wanted.since
    return max(wanted.since, min(port_start, wanted.until - timedelta(minutes=1)))


def port_series(port: Port, wanted: Window | Range, now: datetime) -> dict:
    if isinstance(wanted, Range):
        wanted = Window(now - wanted.span, now, wanted, live=True)
    since, until, period = wanted.since, wanted.until, wanted.range.period_s
    device = xmitwait.device_id(port.device.hca_type, port.device.board_id)
    out = _Series(device)
    # The chosen resolution, then each finer one from where the coarser ends: the newest data not yet rolled.
    levels = {None: (), PortRollup.FIVE_MINUTES: (PortRollup.FIVE_MINUTES,)}.get(
        period, (PortRollup.HOUR, PortRollup.FIVE_MINUTES)
    )
    start, step, rolled = since, float(settings.FABRIC_POLL_INTERVAL), False
    for level in levels:
        end = _rolled(out, port, level, start, until, max(step, level))
        if end > start:  # the next one's first point is a bucket of this period after the last one
            start, step, rolled = end, level, True
    first_raw = _raw(out, port, start, None if wanted.live else until, step)
    # Where the raw tail begins: where the rollups end, or with none yet its first sample (never the range's
    # start: that may be before the port was monitored).
    raw_since = (start if rolled else first_raw) if levels and first_raw else None
    first = first_data()
    # Since when this port is monitored: its first sighting, or its first point drawn where that is earlier
    # (first_seen_at is the time it was stored, its first sample's is the time it was taken).
    port_start = min(d for d in (port.first_seen_at, out.first) if d is not None)
    capacity, link_name = _gbps(portfacts.link(port))
    expected, expected_name = _gbps(portfacts.expected_link(port))
    return {
        "range": wanted.range.name or "custom",
        "source": wanted.range.source,
        "resolution": wanted.range.resolution,
        "raw_since": iso(raw_since),  # where a rollup chart's raw tail begins (None: no tail)
        "rolled": rolled,  # any rollup drawn (False: a rollup range of a port too new to have one)
        "since": iso(since),
        # The time axis: the range, or from when the port is monitored where that is later (a named range
        # of a new port: its data fills the chart, not a sliver at its edge).
        "axis_since": iso(axis_start(port_start, wanted)),
        "port_monitored_since": iso(port_start),
        "until": iso(until),
        "monitored_since": iso(first),
        "message": None if out.t else _empty_message(first, until),
        "t": out.t,
        **out.values,
        "rx_gbps": [None if v is None else v * GBPS for v in out.values["rx"]],
        "tx_gbps": [None if v is None else v * GBPS for v in out.values["tx"]],
        "units": {"throughput": "Gb/s", "packets": "pkt/s", "errors": "errors/h", "congestion": "%"},
        "congestion_unit": xmitwait.xmit_wait_unit(device).short(),  # `8 bytes per count, assumed`
        "errors": out.errors,
        "error_groups": _error_groups(out.errors),
        "link_gbps": out.link_gbps,
        "link_name": out.link_name,
        "capacity_bytes_per_second": None if capacity is None else capacity * 1e9 / 8,
        "link": link_name,
        "expected_gbps": expected,
        "expected": expected_name,
        "resets": out.resets,
        "capped": out.capped,
    }
