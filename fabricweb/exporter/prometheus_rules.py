"""The shipped Prometheus rules (deploy/prometheus/rules/), generated from the health thresholds.

Every number an alert shares with the health rules (fabricweb/health/thresholds.py) is written here
once, as a quantity worked out from the thresholds in the unit Prometheus sees, and put into the
rules through a `<<name>>` placeholder. The committed files are this module's output:

    .venv/bin/python -m fabricweb.exporter.prometheus_rules --write deploy/prometheus/rules

tests/deploy/test_prometheus_rules.py fails when they differ, and `drift()` names each rule whose
number is not what the threshold it mirrors says (a hand edit of the YAML, or a threshold changed
without regenerating). A site that overrides FABRIC_THRESHOLDS or FABRIC_POLL_INTERVAL makes its
own rules the same way:

    python -m fabricweb.exporter.prometheus_rules --poll-interval 5 \\
        --thresholds '{"symbol_errors_per_hour": 240}' --write /etc/prometheus/rules

Health judges a port per poll; Prometheus sees the counters a scrape at a time (every 30 s in the
shipped config). Where health counts per poll, the rule compares the rate that threshold means at the
poll interval (symbol_errors_per_poll / FABRIC_POLL_INTERVAL per second): the same line for errors
that go on, which is what a page is for; a single bad poll is health's event alone. Per-hour and
per-minute thresholds are `increase()` over the same hour or minute. docs/metrics.md lists which rule
mirrors which threshold (`markdown()`, checked by the same test).

Pure: the thresholds module and PyYAML only, no Django.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from fabricweb.health.thresholds import DEFAULT, Thresholds

# FABRIC_POLL_INTERVAL's default (fabricweb/settings.py): the shipped rules assume it.
DEFAULT_POLL_INTERVAL_S = 10.0
# A page waits at least this long, whatever the health thresholds say: a port that bounces once is
# the flapping alert's, not a "down" page.
MIN_PENDING_S = 60.0

RECORDING_FILE = "fabricweb-recording.yml"
ALERTS_FILE = "fabricweb-alerts.yml"
PLACEHOLDER = re.compile(r"<<(\w+)>>")


# --- quantities: the thresholds in the rules' units ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Quantity:
    value: float
    thresholds: tuple[str, ...]  # the Thresholds fields it is worked out from
    meaning: str
    duration: bool = False  # written as a Prometheus duration (`15m`), else as a number

    @property
    def text(self) -> str:
        return duration(self.value) if self.duration else number(self.value)


def quantities(t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> dict[str, Quantity]:
    """Every number the rules share with the health thresholds, by placeholder name."""
    if not (math.isfinite(poll_s) and poll_s > 0):
        raise ValueError(f"poll interval: a number of seconds above 0, got {poll_s!r}")
    poll = number(poll_s)
    return {
        "symbol_errors_per_hour": Quantity(t.symbol_errors_per_hour, ("symbol_errors_per_hour",), "symbol errors/h"),
        "symbol_errors_per_poll": Quantity(t.symbol_errors_per_poll, ("symbol_errors_per_poll",), "symbol errors"),
        "symbol_errors_per_second": Quantity(
            t.symbol_errors_per_poll / poll_s,
            ("symbol_errors_per_poll",),
            f"symbol errors/s: {t.symbol_errors_per_poll} per poll at the {poll} s poll interval",
        ),
        "poll_interval": Quantity(poll_s, (), "s between polls (FABRIC_POLL_INTERVAL)"),
        # Whole link downs: "more than N" is "at least N + 1" (increase() makes one down a little over 1).
        "link_downs_flapping": Quantity(
            t.link_downed_per_hour + 1, ("link_downed_per_hour",), "link downs/h, more than link_downed_per_hour"
        ),
        "link_error_recoveries_per_minute": Quantity(
            t.link_error_recovery_per_minute, ("link_error_recovery_per_minute",), "link error recoveries/min"
        ),
        "flapping_quiet": Quantity(
            t.flapping_quiet_s, ("flapping_quiet_s",), "without a down or retrain: stopped flapping", duration=True
        ),
        "port_rcv_errors_per_hour": Quantity(t.port_rcv_errors_per_hour, ("port_rcv_errors_per_hour",), "errors/h"),
        "remote_physical_errors_per_hour": Quantity(
            t.remote_physical_errors_per_hour, ("remote_physical_errors_per_hour",), "errors/h"
        ),
        "xmit_discards_per_hour": Quantity(t.xmit_discards_per_hour, ("xmit_discards_per_hour",), "discards/h"),
        "xmit_wait_tick_s": Quantity(t.xmit_wait_tick_ns * 1e-9, ("xmit_wait_tick_ns",), "s per port_xmit_wait tick"),
        "xmit_wait_tick_ns": Quantity(t.xmit_wait_tick_ns, ("xmit_wait_tick_ns",), "ns per port_xmit_wait tick"),
        "congestion_share": Quantity(t.congestion_share, ("congestion_share",), "share of time waiting"),
        "congestion_window": Quantity(
            t.congestion_window_s, ("congestion_window_s",), "congested that long", duration=True
        ),
        "down_for": Quantity(
            pending_s(t.down_after_polls, poll_s),
            ("down_after_polls",),
            f"down_after_polls polls of {poll} s, at least {duration(MIN_PENDING_S)}",
            duration=True,
        ),
        "no_sm_for": Quantity(
            pending_s(t.no_sm_after_polls, poll_s),
            ("no_sm_after_polls",),
            f"no_sm_after_polls polls of {poll} s, at least {duration(MIN_PENDING_S)}",
            duration=True,
        ),
    }


def pending_s(polls: int, poll_s: float) -> float:
    return float(max(MIN_PENDING_S, math.ceil(polls * poll_s)))


def number(value: float) -> str:
    """As PromQL reads it, shortest first: 120, 0.25, 4e-9."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa.removesuffix('.0')}e{int(exponent)}"
    return text


def duration(seconds: float) -> str:
    """A Prometheus duration, whole seconds rounded up: 900 -> 15m, 75 -> 1m15s."""
    left = math.ceil(seconds)
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            out += f"{left // size}{unit}"
            left %= size
    return out or "0s"


def seconds(text: str) -> float:
    parts = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or parts is None:
        raise ValueError(f"not a duration: {text!r}")
    d, h, m, s = (int(p or 0) for p in parts.groups())
    return float(((d * 24 + h) * 60 + m) * 60 + s)


# --- the rules ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Folded:
    """A folded block scalar (`>`, or `>-` with `strip`), one source line per item."""

    lines: tuple[str, ...]
    strip: bool = True


def folded(*lines: str) -> Folded:
    return Folded(lines)


def block(*lines: str) -> Folded:
    """A multi-line expression: `>`, keeping its final newline as the hand-written files did."""
    return Folded(lines, strip=False)


Text = str | Folded


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    expr: Text
    severity: str
    summary: Text
    description: Text
    pending: str | None = None  # `for:`: a duration, or a <<placeholder>>
    extra_labels: tuple[tuple[str, str], ...] = ()
    comment: tuple[str, ...] = ()
    # What it mirrors: the Thresholds fields its numbers come from (checked by drift()), the health
    # finding it says, and anything the two judge differently.
    mirrors: tuple[str, ...] = ()
    health: str = ""
    exporter_applies: tuple[str, ...] = ()  # thresholds the exporter applies to the series it reads


@dataclass(frozen=True, slots=True)
class Record:
    name: str
    expr: Text
    comment: tuple[str, ...] = ()
    mirrors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    rules: tuple[Alert | Record, ...]
    comment: tuple[str, ...] = field(default=())


PORT = "{{ $labels.node }} {{ $labels.device }}/{{ $labels.port }}"
SWITCH_PORT = "{{ $labels.switch }} port {{ $labels.port }}"

RECORDING = (
    Group(
        "fabricweb-recording",
        (
            Record("infiniband:port_data_received_bytes:rate1m", "rate(infiniband_port_data_received_bytes_total[1m])"),
            Record(
                "infiniband:port_data_transmitted_bytes:rate1m",
                "rate(infiniband_port_data_transmitted_bytes_total[1m])",
            ),
            Record(
                "infiniband:port_utilisation:ratio1m",
                block(
                    "max by (node, device, port) (",
                    '  {__name__=~"infiniband:port_data_(received|transmitted)_bytes:rate1m"}',
                    ")",
                    "/ on (node, device, port) (infiniband_rate_bytes_per_second > 0)",
                ),
                ("Share of the link's capacity in use, the busier direction (0-1).",),
            ),
            Record(
                "infiniband:port_xmit_wait:ratio1m",
                "rate(infiniband_port_transmit_wait_total[1m]) * <<xmit_wait_tick_s>>",
                mirrors=("xmit_wait_tick_ns",),
                comment=(
                    "Share of time the port had data to send but no credits; port_xmit_wait counts ticks of",
                    "<<xmit_wait_tick_ns>> ns (the health thresholds' xmit_wait_tick_ns; `perfquery -c` shows a"
                    " port's own).",
                ),
            ),
            Record("infiniband:symbol_error:rate1m", "rate(infiniband_symbol_error_total[1m])"),
            Record("infiniband:port_errors_received:rate1m", "rate(infiniband_port_errors_received_total[1m])"),
            Record("infiniband:ports_up:count", "count by (node) (infiniband_port_up == 1)"),
            Record("infiniband:ports_degraded:count", "count by (node) (infiniband_port_degraded == 1)"),
            Record(
                "infiniband:switch_port_data_received_bytes:rate1m",
                "rate(infiniband_switch_port_receive_data_bytes_total[1m])",
                ("Switch ports (infiniband_switch_port_*, labels guid, port, switch).",),
            ),
            Record(
                "infiniband:switch_port_data_transmitted_bytes:rate1m",
                "rate(infiniband_switch_port_transmit_data_bytes_total[1m])",
            ),
            Record(
                "infiniband:switch_port_utilisation:ratio1m",
                block(
                    "max by (guid, port, switch) (",
                    '  {__name__=~"infiniband:switch_port_data_(received|transmitted)_bytes:rate1m"}',
                    ")",
                    "/ on (guid, port, switch) (infiniband_switch_port_rate_bytes_per_second > 0)",
                ),
            ),
            Record("infiniband:switch_port_symbol_error:rate1m", "rate(infiniband_switch_port_symbol_error_total[1m])"),
            Record(
                "infiniband:switch_port_errors_received:rate1m",
                "rate(infiniband_switch_port_receive_errors_total[1m])",
            ),
            Record(
                "infiniband:switch_port_xmit_wait:ratio1m",
                "rate(infiniband_switch_port_transmit_wait_total[1m]) * <<xmit_wait_tick_s>>",
                mirrors=("xmit_wait_tick_ns",),
            ),
        ),
    ),
)

PORTS = Group(
    "fabricweb-ports",
    (
        Alert(
            "InfinibandPortDown",
            block(
                "(infiniband_port_up == 0)",
                "and on (node, device, port) (infiniband_port_expected_lanes > 0)",
                "unless on (node) (infiniband_node_up == 0)",
            ),
            "critical",
            f'"{PORT}: port down"',
            folded(
                f"{PORT} is not ACTIVE (or no longer",
                "reported by its node). See infiniband_state_id / infiniband_physical_state_id",
                "(2: Polling = no cable or the peer is off; 3: Disabled).",
            ),
            pending="<<down_for>>",
            comment=(
                "Down: not ACTIVE, or gone from its node's snapshot. Only ports with an expected link",
                "(one that has been up, or an operator policy) count; ports of stale nodes are NodeStale's.",
                "Waits down_after_polls polls (at least a minute: one bounce is flapping's).",
            ),
            mirrors=("down_after_polls",),
            health="down (critical)",
        ),
        Alert(
            "InfinibandPortDegraded",
            block(
                "(",
                "  (infiniband_port_degraded == 1)",
                "  * on (node, device, port)"
                " group_left (speed, width, expected_speed, expected_width, expected_source)",
                "  infiniband_port_info",
                ")",
                "unless on (node) (infiniband_node_up == 0)",
                "unless on (node, device, port) (infiniband_link_degraded == 1)",
            ),
            "critical",
            folded(
                f"{PORT}: trained at {{{{ $labels.width }}}}",
                "{{ $labels.speed }}, expected {{ $labels.expected_width }} {{ $labels.expected_speed }}",
            ),
            folded(
                f"{PORT} runs at {{{{ $labels.width }}}}",
                "{{ $labels.speed }} where {{ $labels.expected_width }} {{ $labels.expected_speed }} is",
                "expected ({{ $labels.expected_source }}). Check the cable and both ends' port settings.",
            ),
            pending="1m",
            comment=(
                "A port whose link the fabric view knows, below what both ends support, is InfinibandLinkDegraded's",
                "(it names the far end too); this alert keeps ports below a policy or their own past.",
            ),
            health="degraded (critical; warning when only the fabric majority expects more)",
            exporter_applies=("fabric_min_ports",),
        ),
        Alert(
            "InfinibandSymbolErrors",
            "increase(infiniband_symbol_error_total[1h]) > <<symbol_errors_per_hour>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} symbol errors/h"',
            folded(
                "Over <<symbol_errors_per_hour>> symbol errors/h: the link's bit error rate is worse than 1e-12."
                " Check or reseat the cable.",
            ),
            comment=(
                "Symbol errors: a compliant link has BER below 1e-12; NVIDIA's NIC health monitor calls more",
                "than 120 symbol errors per hour fatal (health: symbol_errors_per_hour).",
            ),
            mirrors=("symbol_errors_per_hour",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSymbolErrorsFast",
            "rate(infiniband_symbol_error_total[1m]) > <<symbol_errors_per_second>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.1f\\" }}}} symbol errors/s"',
            folded(
                "Over <<symbol_errors_per_poll>> symbol errors in a <<poll_interval>> s poll: the link is degrading"
                " fast. Check or",
                "reseat the cable; with retrains or link downs as well it is failing.",
            ),
            comment=(
                "Fast: more than symbol_errors_per_poll in a poll (ibqueryerrors' 10 per check), as a rate",
                "at the poll interval: <<symbol_errors_per_poll>> per <<poll_interval>> s is"
                " <<symbol_errors_per_second>>/s.",
            ),
            mirrors=("symbol_errors_per_poll",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandPortFlapping",
            block(
                "(",
                "  increase(infiniband_link_downed_total[1h]) >= <<link_downs_flapping>>",
                "  and on (node, device, port) (",
                "    increase(infiniband_link_downed_total[<<flapping_quiet>>]) > 0",
                "    or increase(infiniband_link_error_recovery_total[<<flapping_quiet>>]) > 0",
                "  )",
                ")",
                "or increase(infiniband_link_error_recovery_total[1m]) > <<link_error_recoveries_per_minute>>",
            ),
            "critical",
            f'"{PORT}: link flapping"',
            folded(
                "The link goes down and comes back (link_downed), or retrains (link_error_recovery),",
                "again and again. Check the cable and the switch port.",
            ),
            comment=(
                "Flapping: the link went down and came back more than link_downed_per_hour times in an hour",
                "and bounced within flapping_quiet_s, or retrained more than link_error_recovery_per_minute",
                "times in the last minute (NVIDIA NIC health): health's critical flapping.",
            ),
            mirrors=("link_downed_per_hour", "flapping_quiet_s", "link_error_recovery_per_minute"),
            health="flapping (critical; health also records one bounce as info and retrains per hour as warning)",
        ),
        Alert(
            "InfinibandReceiveErrors",
            "increase(infiniband_port_errors_received_total[1h]) > <<port_rcv_errors_per_hour>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} receive errors/h"',
            "Malformed packets arrive on this link (PortRcvErrors over <<port_rcv_errors_per_hour>>/h)."
            " Check the cable.",
            mirrors=("port_rcv_errors_per_hour",),
            health="rcv_errors (warning)",
        ),
        Alert(
            "InfinibandRemotePhysicalErrors",
            "increase(infiniband_port_receive_remote_physical_errors_total[1h]) > <<remote_physical_errors_per_hour>>",
            "info",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} remote physical errors/h"',
            folded("Packets arrive already marked bad: the fault is upstream, elsewhere in the fabric."),
            mirrors=("remote_physical_errors_per_hour",),
            health="remote_physical_errors (info)",
        ),
        Alert(
            "InfinibandTransmitDiscards",
            block(
                "increase(infiniband_port_discards_transmitted_total[1h]) > <<xmit_discards_per_hour>>",
                "unless on (node, device, port) (increase(infiniband_link_downed_total[1h]) > 0)",
            ),
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} transmit discards/h"',
            "Packets dropped on send, from congestion or a peer that stopped taking data.",
            comment=("A link going down discards what was queued: down and flapping say that already (as health).",),
            mirrors=("xmit_discards_per_hour",),
            health="xmit_discards (warning; none while the link went down within the hour)",
        ),
        Alert(
            "InfinibandCongestion",
            "infiniband:port_xmit_wait:ratio1m > <<congestion_share>>",
            "warning",
            folded(
                f"{PORT}: waiting for credits",
                "{{ $value | humanizePercentage }} of the time",
            ),
            folded(
                "port_xmit_wait says the port had data to send but no credits"
                " (<<xmit_wait_tick_ns>> ns per tick assumed)."
            ),
            pending="<<congestion_window>>",
            comment=(
                "Congestion: waiting for credits more than congestion_share of the time for congestion_window_s,",
                "each minute of it (health: the window's average, so bursts averaging over it are health's only).",
            ),
            mirrors=("congestion_share", "congestion_window_s", "xmit_wait_tick_ns"),
            health="congestion (warning)",
        ),
        Alert(
            "InfinibandCounterCapped",
            "infiniband_port_capped == 1",
            "info",
            f'"{PORT}: {{{{ $labels.counter }}}} stuck at its maximum"',
            folded(
                "Its rate is unknown until the counter is reset (perfquery -R); the 64-bit counters_ext/",
                "series (infiniband_legacy_*) keep counting where the HCA has them.",
            ),
            pending="10m",
            comment=("ConnectX-3 and other old PMAs: a 32-bit counter stuck at all-ones has no rate until reset.",),
            health="capped_counters (info)",
        ),
        Alert(
            "InfinibandNoSubnetManager",
            block(
                "(infiniband_physical_state_id == 5)",
                "and on (node, device, port) (infiniband_state_id == 2 or infiniband_state_id == 3)",
            ),
            "critical",
            f'"{PORT}: LinkUp but not ACTIVE, no subnet manager"',
            folded(
                "The link is physically up but the port stays in INIT or ARMED: no subnet manager",
                "answered. Check that opensm (or the switch's SM) runs and reaches this port.",
            ),
            pending="<<no_sm_for>>",
            comment=(
                "LinkUp but INIT or ARMED: the link trained but no subnet manager brought the port up",
                "(for no_sm_after_polls polls, at least a minute).",
            ),
            mirrors=("no_sm_after_polls",),
            health="no_subnet_manager (critical; warning for a port no policy or history expects up)",
        ),
    ),
)

DEVICES = Group(
    "fabricweb-devices",
    (
        Alert(
            "InfinibandPcieBottleneck",
            block(
                "infiniband_device_pcie_bandwidth_bytes_per_second",
                "< on (node, device)",
                "max by (node, device) (",
                "  infiniband_rate_bytes_per_second and on (node, device, port) (infiniband_port_up == 1)",
                ")",
            ),
            "warning",
            '"{{ $labels.node }} {{ $labels.device }}: PCIe link limits the InfiniBand port"',
            folded(
                "The PCIe link carries {{ $value | humanize }}B/s, less than the port's link rate. Compare",
                "infiniband_device_pcie_link_width_lanes / _speed_gts with their max_ values; reseat",
                "the card or move it to a full-width slot.",
            ),
            pending="1m",
            comment=("The HCA's PCIe link, as trained, carries less than its fastest active port.",),
            health="pcie (warning)",
        ),
    ),
)

SWITCHES = Group(
    "fabricweb-switches",
    (
        Alert(
            "InfinibandSwitchPortDown",
            block(
                '(infiniband_link_up{type!="host"} == 0)',
                'unless on (node) label_replace(infiniband_switch_up == 0, "node", "$1", "switch", "(.+)")',
                'unless on (peer_node) label_replace(infiniband_switch_up == 0, "peer_node", "$1", "switch", "(.+)")',
            ),
            "critical",
            '"{{ $labels.end }}: switch port down (cabled to {{ $labels.peer }})"',
            folded(
                "The link {{ $labels.end }} ↔ {{ $labels.peer }} was up and is down. See",
                "infiniband_switch_port_physical_state_id (2: Polling = no cable or the far end is off;",
                "3: Disabled).",
            ),
            pending="<<down_for>>",
            comment=(
                "A switch port down that was up: a link series exists only for a cable the sweeps saw up, and stays",
                "when it goes down (health: down after down_after_polls polls; the alert waits as the host's). An",
                "unreachable switch's ports keep their last values, and the links to it go down:",
                "InfinibandSwitchUnreachable says both.",
            ),
            mirrors=("down_after_polls",),
            health="down (critical)",
        ),
        Alert(
            "InfinibandLinkDegraded",
            block(
                "(infiniband_link_rate_bytes_per_second * 8 and (infiniband_link_degraded == 1))",
                "unless on (node) (infiniband_node_up == 0)",
                'unless on (node) label_replace(infiniband_switch_up == 0, "node", "$1", "switch", "(.+)")',
            ),
            "critical",
            '"{{ $labels.end }} ↔ {{ $labels.peer }}: link trained below what both ends support"',
            folded(
                "The {{ $labels.type }} link {{ $labels.end }} ↔ {{ $labels.peer }} runs at",
                "{{ $value | humanize }}b/s where both ends support",
                '{{ with printf "infiniband_link_capable_rate_bytes_per_second{end=%q,peer=%q} * 8" $labels.end'
                " $labels.peer | query }}{{ . | first | value | humanize }}b/s{{ end }}",
                "(?set=detail's infiniband_link_info has speed and width). Check the cable and both ends'"
                " port settings.",
            ),
            pending="1m",
            comment=(
                "Trained below what both ends support (the fastest speed and widest width common to both, as",
                "iblinkinfo's \"could be\"), speed and width judged separately: the health rules' degraded finding",
                "on the end that speaks for the link, whose expected link is that capability unless a policy says",
                "otherwise. Hosts and switches alike; the value is the trained rate in bits per second.",
            ),
            health="degraded (critical: the expectation is what both ends support)",
        ),
        Alert(
            "InfinibandSwitchPortSymbolErrors",
            "increase(infiniband_switch_port_symbol_error_total[1h]) > <<symbol_errors_per_hour>>",
            "warning",
            f'"{SWITCH_PORT}: {{{{ $value | printf \\"%.0f\\" }}}} symbol errors/h"',
            folded(
                "Over <<symbol_errors_per_hour>> symbol errors/h: the link's bit error rate is worse than 1e-12."
                " Check or reseat the cable",
                "(infiniband_link_up names the far end).",
            ),
            comment=(
                "Symbol errors on a switch port, as the host's: the health thresholds' symbol_errors_per_hour",
                "(<<symbol_errors_per_hour>>/h: bit error rate worse than 1e-12) and symbol_errors_per_poll",
                "(<<symbol_errors_per_poll>> in one poll: <<symbol_errors_per_second>>/s at the"
                " <<poll_interval>> s poll).",
            ),
            mirrors=("symbol_errors_per_hour",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSwitchPortSymbolErrorsFast",
            "rate(infiniband_switch_port_symbol_error_total[1m]) > <<symbol_errors_per_second>>",
            "warning",
            f'"{SWITCH_PORT}: {{{{ $value | printf \\"%.1f\\" }}}} symbol errors/s"',
            folded(
                "Over <<symbol_errors_per_poll>> symbol errors in a <<poll_interval>> s poll: the link is"
                " degrading fast. Check or reseat the cable; with",
                "retrains or link downs as well it is failing.",
            ),
            mirrors=("symbol_errors_per_poll",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSwitchUnreachable",
            "infiniband_switch_up == 0",
            "critical",
            '"{{ $labels.switch }}: switch not reached by the fabric sweeps"',
            folded(
                "{{ $labels.switch }} ({{ $labels.guid }}) did not answer the last full sweep: its ports' state and",
                "counters are its last known ones. The open `unreachable` event says whether its links are up",
                "(a mute management agent) or down (power, or every cable).",
            ),
            comment=(
                "Not reached by the last full sweep (health: the `unreachable` event, critical): mute (its links",
                "are up but it does not answer management datagrams) or cut off. Its ports' series keep their",
                "last values until it answers again.",
            ),
            health="unreachable (critical)",
        ),
        Alert(
            "InfinibandFabricCollectorStale",
            "infiniband_fabric_collector_up == 0",
            "warning",
            '"{{ $labels.collector }}: no fabric sweep stored recently"',
            folded(
                "The fabric collector or its host is down. With no collector sweeping, the switches' series are",
                "old (infiniband_switch_last_seen_timestamp_seconds says how old).",
            ),
            health="stale (the collector's node)",
            exporter_applies=("stale_after_polls",),
        ),
    ),
    comment=(
        "The switch side (the fabric collector's sweeps): switch ports, the links the fabric view has seen,",
        "switches. A link has one series per cable, from the end that speaks for it (a host's port, else the",
        "first switch port by name), labels `end` and `peer` naming both ends; a host's own link is said by",
        "its port's alerts above, so these take the others (type inter-switch, or adapter: a switch port",
        "facing a channel adapter fabricweb has no agent on).",
    ),
)

NODES = Group(
    "fabricweb-nodes",
    (
        Alert(
            "InfinibandNodeStale",
            "infiniband_node_up == 0",
            "warning",
            '"{{ $labels.node }}: no snapshot stored recently"',
            folded("The node or its fabricweb agent is down: its ports' counters are no longer exported."),
            health="stale",
            exporter_applies=("stale_after_polls",),
        ),
    ),
)

EXPORTER = Group(
    "fabricweb-exporter",
    (
        Alert(
            "FabricwebExporterDown",
            'up{job=~"fabricweb.*"} == 0',
            "critical",
            '"fabricweb /metrics ({{ $labels.job }}) cannot be scraped"',
            "The fabric's state is not reaching Prometheus; no InfiniBand alert can fire.",
            pending="2m",
            health="none: Prometheus' own",
        ),
        Alert(
            "FabricwebIngestStalled",
            "fabricweb_exporter_last_ingest_age_seconds > 300",
            "critical",
            '"fabricweb has stored no snapshot for {{ $value | humanizeDuration }}"',
            folded(
                "/metrics answers but shows old data: the ingest consumer, the broker or every node",
                "agent is down.",
            ),
            pending="2m",
            health="none: Prometheus' own",
        ),
    ),
)

ALERTS = (PORTS, DEVICES, SWITCHES, NODES, EXPORTER)

# Health thresholds no rule's number follows, and why. Every field of Thresholds is mirrored by a rule,
# applied by the exporter to a series a rule reads, or here (the test checks all three together).
HEALTH_ONLY = {
    "fast_window_max_s": "a guard on one poll's count after missed polls; a rate over a minute needs none",
    "link_error_recovery_per_hour": "health's warning-level flapping (retraining); "
    '`infiniband_events_open{kind="flapping"}` has it',
    "local_link_integrity_errors_per_hour": "health's event only (critical); "
    '`infiniband_events_open{kind="link_integrity_errors"}` has it',
    "buffer_overrun_errors_per_hour": "health's event only (critical); "
    '`infiniband_events_open{kind="buffer_overrun_errors"}` has it',
    "clock_skew_s": "a node's clock against the server's: not in /metrics",
    "vanished_after_polls": "health's event; a vanished port is `infiniband_port_up` 0 (InfinibandPortDown)",
    "resolve_after_polls": "health's hysteresis; an alert resolves when its expression stops matching",
}

HEADERS = {
    RECORDING_FILE: (
        "Recording rules for the Grafana dashboard (deploy/grafana) and the alerts: rates over the",
        "raw counters, computed once per evaluation instead of once per panel refresh.",
    ),
    ALERTS_FILE: (
        "Alert rules over fabricweb's /metrics (docs/metrics.md). Thresholds follow",
        "shared/docs/infiniband.md §4 (NVIDIA NIC health, infiniband-diags) through fabricweb's own",
        "health thresholds (fabricweb/health/thresholds.py); severity as in fabricweb's events:",
        "critical pages someone, warning is for today, info is on the record.",
        "Unit tests: deploy/prometheus/tests/ (`promtool test rules`, run by the test suite).",
    ),
}
GENERATED = (
    "Generated from the health thresholds (<<thresholds_note>>) by fabricweb/exporter/prometheus_rules.py:",
    "edit that and run `.venv/bin/python -m fabricweb.exporter.prometheus_rules --write deploy/prometheus/rules`.",
)


# --- rendering ------------------------------------------------------------------------------------


def fill(text: str, q: dict[str, Quantity]) -> str:
    def one(m: re.Match) -> str:
        if m[1] not in q:
            raise KeyError(f"no quantity <<{m[1]}>>")
        return q[m[1]].text

    return PLACEHOLDER.sub(one, text)


def _scalar(key: str, value: Text, indent: int, q: dict[str, Quantity]) -> list[str]:
    pad = " " * indent
    if isinstance(value, Folded):
        head = f"{pad}{key}: {'>-' if value.strip else '>'}"
        return [head, *(f"{pad}  {fill(line, q)}" for line in value.lines)]
    text = fill(value, q)
    if text.startswith('"'):  # written quoted, as YAML double-quoted (the same escapes as JSON's)
        return [f"{pad}{key}: {text}"]
    return [f"{pad}{key}: {_plain_or_quoted(text)}"]


def _plain_or_quoted(text: str) -> str:
    import yaml

    try:
        if yaml.safe_load(f"k: {text}") == {"k": text}:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


def _comment(lines: Iterable[str], indent: int, q: dict[str, Quantity]) -> list[str]:
    return [f"{' ' * indent}# {fill(line, q)}".rstrip() for line in lines]


def _rule(rule: Alert | Record, q: dict[str, Quantity]) -> list[str]:
    out = _comment(rule.comment, 6, q)
    if isinstance(rule, Record):
        out.append(f"      - record: {rule.name}")
        out += _scalar("expr", rule.expr, 8, q)
        return out
    out.append(f"      - alert: {rule.name}")
    out += _scalar("expr", rule.expr, 8, q)
    if rule.pending:
        out.append(f"        for: {fill(rule.pending, q)}")
    out.append("        labels:")
    out += [f"          {k}: {v}" for k, v in (("severity", rule.severity), *rule.extra_labels)]
    out.append("        annotations:")
    out += _scalar("summary", rule.summary, 10, q)
    out += _scalar("description", rule.description, 10, q)
    return out


def render(groups: tuple[Group, ...], header: tuple[str, ...], q: dict[str, Quantity], note: str) -> str:
    out = _comment(header, 0, q)
    out += [f"# {line.replace('<<thresholds_note>>', note)}" for line in GENERATED]
    out.append("groups:")
    for i, group in enumerate(groups):
        if i:
            out.append("")
        out += _comment(group.comment, 2, q)
        out += [f"  - name: {group.name}", "    rules:"]
        alerts = any(isinstance(r, Alert) for r in group.rules)
        for j, rule in enumerate(group.rules):
            if j and alerts:
                out.append("")  # alerts are spaced out, recording rules are not
            out += _rule(rule, q)
    return "\n".join(out) + "\n"


def build(t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> dict[str, str]:
    """File name -> the rule file's text, for these thresholds at this poll interval."""
    q = quantities(t, poll_s)
    note = _settings_note(t, poll_s)
    return {
        RECORDING_FILE: render(RECORDING, HEADERS[RECORDING_FILE], q, note),
        ALERTS_FILE: render(ALERTS, HEADERS[ALERTS_FILE], q, note),
    }


def _settings_note(t: Thresholds, poll_s: float) -> str:
    """What the file was made from, when not the defaults."""
    changed = {f.name: getattr(t, f.name) for f in fields(t) if getattr(t, f.name) != getattr(DEFAULT, f.name)}
    parts = [f"FABRIC_THRESHOLDS='{json.dumps(changed, sort_keys=True)}'"] if changed else []
    if poll_s != DEFAULT_POLL_INTERVAL_S:
        parts.append(f"FABRIC_POLL_INTERVAL={number(poll_s)}")
    return ", ".join(parts) or "the defaults"


def alerts() -> dict[str, Alert]:
    return {rule.name: rule for group in ALERTS for rule in group.rules if isinstance(rule, Alert)}


def rules() -> dict[str, Alert | Record]:
    """Every rule, recording and alerting, by name."""
    return {rule.name: rule for group in (*RECORDING, *ALERTS) for rule in group.rules}


# --- drift: a rule file against the thresholds ----------------------------------------------------


def _pattern(template: str) -> re.Pattern:
    """A rule's template as a pattern over its loaded text: each placeholder captures a number or duration."""
    parts, seen, last = [], set(), 0
    for m in PLACEHOLDER.finditer(template):
        parts.append(_loose(template[last : m.start()]))
        parts.append(f"(?P={m[1]})" if m[1] in seen else f"(?P<{m[1]}>[0-9][0-9a-z.+-]*?)")
        seen.add(m[1])
        last = m.end()
    parts.append(_loose(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


def _loose(text: str) -> str:
    """Literal text, any run of whitespace matching any other (YAML folding moves line breaks)."""
    return r"\s+".join(re.escape(word) for word in re.split(r"\s+", text)) if text.strip() else r"\s*"


def _flat(value: Text) -> str:
    if isinstance(value, Folded):
        return " ".join(value.lines)
    return value[1:-1].replace('\\"', '"') if value.startswith('"') else value


def _templates(rule: Alert | Record) -> dict[str, str]:
    if isinstance(rule, Record):
        return {"expr": _flat(rule.expr)}
    out = {"expr": _flat(rule.expr), "summary": _flat(rule.summary), "description": _flat(rule.description)}
    if rule.pending:
        out["for"] = rule.pending
    return out


def loaded(texts: Iterable[str]) -> dict[str, dict]:
    """Rule files' texts -> each rule as YAML loads it, by its alert or record name."""
    import yaml

    return {
        rule.get("alert") or rule["record"]: rule
        for text in texts
        for group in yaml.safe_load(text)["groups"]
        for rule in group["rules"]
    }


def drift(found: dict[str, dict], t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> list[str]:
    """What in `found` (`loaded()`: rule name -> the rule as YAML loads it) disagrees with the thresholds at
    this poll interval: one line each, naming the rule, what it says and what the threshold it mirrors says."""
    q = quantities(t, poll_s)
    problems = []
    for name, rule in rules().items():
        got = found.get(name)
        if got is None:
            problems.append(f"{name}: missing")
            continue
        if isinstance(rule, Alert) and got.get("labels", {}).get("severity") != rule.severity:
            problems.append(f"{name}: severity {got.get('labels', {}).get('severity')!r}, not {rule.severity!r}")
        for key, template in _templates(rule).items():
            value = str((got.get("annotations") or {} if key in ("summary", "description") else got).get(key, ""))
            value = value.strip()
            m = _pattern(template.strip()).fullmatch(value)
            if m is None:
                problems.append(f"{name}: {key} is not the builder's ({value!r})")
                continue
            for placeholder, text in m.groupdict().items():
                want = q[placeholder]
                try:
                    have = seconds(text) if want.duration else float(text)
                except ValueError:
                    problems.append(f"{name}: {key} has {text!r} for <<{placeholder}>>")
                    continue
                if not math.isclose(have, want.value, rel_tol=1e-9):
                    source = ", ".join(f"{f} = {number(getattr(t, f))}" for f in want.thresholds) or "poll interval"
                    problems.append(
                        f"{name}: {key} says {text} where the health thresholds say {want.text}"
                        f" ({want.meaning}; {source})"
                    )
    return problems


# --- docs -----------------------------------------------------------------------------------------


def markdown(t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> str:
    """The table docs/metrics.md carries: each alert, the numbers it shares with health, the threshold they
    come from and the health finding it says."""
    q = quantities(t, poll_s)
    rows = [
        "| alert | severity | the rule's numbers | health threshold (default) | health finding |",
        "|---|---|---|---|---|",
    ]
    for name, rule in alerts().items():
        used = dict.fromkeys(PLACEHOLDER.findall(_flat(rule.expr) + " " + (rule.pending or "")))
        numbers = [f"{'`for:` ' if f'<<{p}>>' == rule.pending else ''}{q[p].text} ({q[p].meaning})" for p in used]
        mirrored = [f"`{f}` ({number(getattr(t, f))})" for f in rule.mirrors]
        mirrored += [f"`{f}` ({number(getattr(t, f))}), by the exporter" for f in rule.exporter_applies]
        rows.append(
            f"| {name} | {rule.severity} | {'; '.join(numbers) or '-'} | {', '.join(mirrored) or '-'} | {rule.health} |"
        )
    rows += ["", "Health thresholds no rule follows, and why:", ""]
    rows += [f"- `{name}`: {why}." for name, why in HEALTH_ONLY.items()]
    return "\n".join(rows) + "\n"


# --- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None, out: Callable[[str], object] = sys.stdout.write) -> int:
    p = argparse.ArgumentParser(
        prog="python -m fabricweb.exporter.prometheus_rules",
        description="Write the Prometheus rule files from the health thresholds (the defaults: the shipped files).",
    )
    p.add_argument("--write", metavar="DIR", type=Path, help="write both files into DIR (default: print them)")
    p.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL_S, metavar="S",
                   help="FABRIC_POLL_INTERVAL in seconds (default: %(default)g)")  # fmt: skip
    p.add_argument("--thresholds", default="{}", metavar="JSON",
                   help="FABRIC_THRESHOLDS, a JSON object of overrides (default: none)")  # fmt: skip
    p.add_argument("--markdown", action="store_true", help="print the docs table of rules and thresholds instead")
    args = p.parse_args(argv)
    try:
        overrides = json.loads(args.thresholds)
        if not isinstance(overrides, dict):
            raise ValueError("--thresholds: a JSON object")
        t = Thresholds.from_mapping(overrides)
        files = build(t, args.poll_interval)
    except ValueError as e:
        p.error(str(e))
    if args.markdown:
        out(markdown(t, args.poll_interval))
    elif args.write:
        for name, text in files.items():
            (args.write / name).write_text(text)
    else:
        out("".join(f"# --- {name}\n{text}" for name, text in files.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
