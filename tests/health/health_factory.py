"""Builders for health-rule inputs: a healthy ACTIVE port unless a test says otherwise."""

from __future__ import annotations

from collectors.link import make_rate
from fabricweb.health.rules.view import PcieView, PortView

EDR = make_rate("EDR", 4)
HDR = make_rate("HDR", 4)
QDR = make_rate("QDR", 4)

NOW = 1_700_000_000.0

# Every counter the rules read, at zero: a clean poll.
ZERO = {
    "symbol_error": 0,
    "link_error_recovery": 0,
    "link_downed": 0,
    "port_rcv_errors": 0,
    "port_rcv_remote_physical_errors": 0,
    "port_xmit_discards": 0,
    "local_link_integrity_errors": 0,
    "excessive_buffer_overrun_errors": 0,
    "port_xmit_wait": 0,
}


def port_view(**changes) -> PortView:
    """cn042 mlx5_0/1: ACTIVE, LinkUp, 4X EDR as it always was, clean counters, Gen4 x16 PCIe."""
    deltas = dict(ZERO)
    deltas.update(changes.pop("deltas", {}))
    base = dict(
        node="cn042",
        device="mlx5_0",
        port=1,
        ts=NOW,
        interval_s=10.0,
        hca_type="MT4119",
        state_id=4,
        state_name="ACTIVE",
        phys_state_id=5,
        phys_state_name="LinkUp",
        link=EDR,
        link_layer="InfiniBand",
        ever_up=True,
        best_link=EDR,
        deltas=deltas,
        pcie=PcieView(16.0, 16, 16.0, 16),
    )
    # A test that sets an id alone gets the kernel's name for it, not the healthy default's.
    for field in ("state", "phys_state"):
        if f"{field}_id" in changes and f"{field}_name" not in changes:
            base[f"{field}_name"] = None
    base.update(changes)
    return PortView(**base)


def history(*polls: dict[str, int | None], interval: float = 10.0, end: float = NOW) -> tuple:
    """Earlier polls, oldest first, the last one `interval` seconds before `end`."""
    n = len(polls)
    return tuple((end - interval * (n - i), interval, deltas) for i, deltas in enumerate(polls))


def messages(judgement) -> list[str]:
    return [f.message for f in judgement.findings]


def kinds(judgement) -> set[str]:
    return {str(f.kind) for f in judgement.findings}
