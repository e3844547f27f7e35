"""The numbers the rules share with the health thresholds: each a quantity worked out from the thresholds
in the unit Prometheus sees, named by the `<<placeholder>>` that puts it into a rule; and how PromQL
writes a number or a duration."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fabricweb.thresholds import DEFAULT, Thresholds

# FABRIC_POLL_INTERVAL's default (fabricweb/settings.py): the shipped rules assume it.
DEFAULT_POLL_INTERVAL_S = 10.0
# A page waits at least this long, whatever the health thresholds say: a port that bounces once is
# the flapping alert's, not a "down" page.
MIN_PENDING_S = 60.0

PLACEHOLDER = re.compile(r"<<(\w+)>>")


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
        "congestion_share": Quantity(t.congestion_share, ("congestion_share",), "share of link time lost"),
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
