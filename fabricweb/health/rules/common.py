"""What every rule module shares: the judgement's shape, the kinds judged per port and per device,
whether a port should be up, a port's finding in words, and numbers in words."""

from __future__ import annotations

from dataclasses import dataclass

from collectors.facts import is_ethernet

from .expectation import Expectation
from .findings import Finding, Kind, Severity, link_label, port_key
from .view import PortView

CRITICAL, WARNING, INFO = Severity.CRITICAL, Severity.WARNING, Severity.INFO

# A RoCE port's lossless Ethernet (rules/lossless.py).
LOSSLESS_KINDS = (
    Kind.PAUSE_RECEIVED,
    Kind.PAUSE_SENT,
    Kind.PAUSE_STORM,
    Kind.CNP_STORM,
    Kind.ROCE_LOSS,
    Kind.RX_DISCARDS,
)

INIT, ARMED = 2, 3

PORT_KINDS = (
    Kind.DOWN,
    Kind.DEGRADED,
    Kind.NO_SM,
    Kind.SYMBOL_ERRORS,
    Kind.FLAPPING,
    Kind.RCV_ERRORS,
    Kind.REMOTE_PHYSICAL_ERRORS,
    Kind.XMIT_DISCARDS,
    Kind.LINK_INTEGRITY,
    Kind.BUFFER_OVERRUN,
    Kind.CONGESTION,
    Kind.CAPPED,
    Kind.VANISHED,
    *LOSSLESS_KINDS,
)
DEVICE_KINDS = (Kind.PCIE, Kind.PCIE_PATH, Kind.PCIE_NUMA, Kind.VANISHED)
# A link's own state: one problem for the whole cable, said by the end that speaks for it (PortView.link_owner).
LINK_KINDS = frozenset({Kind.DOWN, Kind.DEGRADED, Kind.NO_SM, Kind.FLAPPING})


@dataclass(frozen=True, slots=True)
class Judgement:
    findings: list[Finding]
    unknown: frozenset[str]  # keys this poll says nothing about: hold their events
    expectation: Expectation | None = None


def ethernet(view: PortView) -> bool:
    return is_ethernet(view.link_layer)


def expect_up(view: PortView) -> bool:
    # An operator's word beats history both ways: a spare port marked expect_up=False stays quiet.
    return view.policy.expect_up if view.policy is not None else view.ever_up


def port_finding(view: PortView, kind: Kind, severity: Severity, text: str, **details: object) -> Finding:
    label = link_label(view.node, view.device, view.port, view.far_end)
    if view.far_end:
        details["far_end"] = view.far_end
    return Finding(kind, severity, port_key(kind, view.node, view.device, view.port), f"{label}: {text}", details)


# --- words and numbers --------------------------------------------------------


def seconds(x: object) -> float:
    return float(x) if positive(x) else 0.0


def positive(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and x == x and 0 < x < float("inf")


def fmt_n(x: float) -> str:
    """A count or rate for a message: whole when it is (nearly) whole, thousands separated."""
    return f"{round(x):,}" if abs(x - round(x)) < 0.05 else f"{x:,.1f}"


def fmt_g(x: float) -> str:
    return f"{x:g}"


def fmt_times(x: float) -> str:
    n = round(x)
    return "once" if n <= 1 else f"{n:,} times"


def fmt_s(value: float) -> str:
    value = seconds(value)
    if value >= 120:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s" if value >= 1 else f"{value:.2g} s"
