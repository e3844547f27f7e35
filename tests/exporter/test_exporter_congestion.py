"""Covers collectors/xmitwait.py, fabricweb/exporter/congestion.py, fabricweb/health/rules/counters.py,
fabricweb/dashboard/series.py, fabricweb/health/records/context.py.

Congestion as lost bandwidth, end to end: PortXmitWait set on switch ports of two ASICs at two link
rates, and a saturated host port, swept and ingested through the real paths. The share of link time lost is the
hand computation, and the congestion rule's finding, the port's chart and /metrics say that same number.

The hand computations (docs/infiniband.md 3b): lost bytes = counts x bytes per count (x lanes where the ASIC
counts per lane); share = lost bytes / (link bytes/s x seconds). 4X QDR is 40 Gb/s = 5e9 B/s, 12X QDR 1.5e10 B/s.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from collectors.facts import SWITCH_DEVICE
from fabricweb.dashboard.series import RANGES, port_series
from fabricweb.health.models import Event
from fabricweb.health.records import context
from fabricweb.inventory.models import Node, Port
from tests.exporter.exporter_support import LiveWorld, by_name, port, scrape, switch_port

QUANTUM, SWITCH_IB_2 = 0xD2F0, 0xCF08
# (switch, port, lanes, counts per 10 s poll, share): leaf01 is a Quantum (8 bytes of port time a count),
# leaf02 a Switch-IB 2 (32 bytes of each lane's time a count).
CASES = (
    ("leaf01", 7, 4, 625_000_000, 0.10),  # 625e6 x 8 B = 5e9 B of 4X QDR's 5e10 B in 10 s
    ("leaf01", 8, 12, 625_000_000, 5e9 / 1.5e11),  # the same 5e9 B of 12X QDR's 1.5e11 B: 3.3%, under 5%
    ("leaf02", 7, 4, 39_062_500, 0.10),  # 39,062,500 x 32 B x 4 lanes = 5e9 B of 5e10 B
    ("leaf02", 8, 12, 78_125_000, 0.20),  # 78,125,000 x 32 B x 12 lanes = 3e10 B of 1.5e11 B
)
UNITS = {"leaf01": "8 bytes per count on Quantum", "leaf02": "32 bytes per lane per count on Switch-IB 2"}
POLLS = 2  # polls of steady waits after the baseline


@pytest.fixture
def congested(tmp_path, each_db, settings):
    # The rule's window one 10 s poll, as /metrics' is: a 32-bit port_xmit_wait losing 10% of 4X HDR stops at
    # all-ones in ~14 s, so the host port is judged on the one poll it counts (docs/health.md).
    settings.FABRIC_THRESHOLDS = {"congestion_window_s": 10}
    context.forget()
    world = LiveWorld(tmp_path / "sim", polls=1 + POLLS)
    b = world.builder
    b.nodes["leaf02"].device_id = SWITCH_IB_2  # (the builder's switches are Quantum, 0xd2f0)
    for switch, number, lanes, _, _ in CASES:  # each uplink at its width, QDR, to the spine port it has
        guid, far = b.nodes[switch].ports[number].peer
        spine = next(name for name, node in b.nodes.items() if node.guid == guid)
        b.link(switch, number, spine, far, lanes=lanes, speed="QDR")
    world.poll()  # the counters' baseline
    for i in range(POLLS):
        for switch, number, _, counts, _ in CASES:
            b.add(switch, number, "port_xmit_wait", counts)
        if i == POLLS - 1:
            world.sim.add_fault("cn001/mlx5_0/1:saturate")  # loses 10% of its 4X HDR link, in the HCA's unit
        world.poll()
    yield world
    context.forget()


def open_congestion() -> dict[tuple[str, int], Event]:
    events = Event.objects.filter(kind="congestion", resolved_at__isnull=True).select_related("node", "port")
    return {(e.node.name, e.port.number): e for e in events}


def chart(node: str, device: str, number: int) -> dict:
    """The port page's chart series (its `series` JSON) over the last hour."""
    row = Port.objects.select_related("device__node").get(device__node__name=node, device__name=device, number=number)
    return port_series(row, RANGES["1h"], timezone.now())


def test_the_lost_share_is_the_hand_computation_in_the_rule_the_chart_and_metrics(client, congested):
    guids = dict(Node.objects.filter(kind=Node.Kind.SWITCH).values_list("name", "guid"))
    metrics = by_name(scrape(client), "infiniband_switch_port_congestion_ratio")
    events = open_congestion()
    for switch, number, _, _, share in CASES:
        assert metrics[switch_port(switch, number, guids[switch])] == pytest.approx(share, rel=1e-9)
        drawn = chart(switch, SWITCH_DEVICE, number)
        assert drawn["congestion_pct"][-POLLS:] == [pytest.approx(share * 100, rel=1e-9)] * POLLS
        assert drawn["congestion_unit"] == UNITS[switch]
        event = events.get((switch, number))
        if share <= 0.05:
            assert event is None, event.message
            continue
        assert event.details["lost_share"] == round(share, 3)
        assert event.message.startswith(f"{switch} port {number} ↔ spine01 port ")  # both ends of the link
        assert event.message.endswith(
            f": congested: {share:.0%} of the link's time lost waiting for credits in the last 10 s "
            f"(port_xmit_wait at {UNITS[switch]}, over 5%)"
        )


def test_a_host_port_is_counted_in_its_hcas_assumed_unit_and_says_so(client, congested):
    # cn001's ConnectX-6 (MT4123, 0x101b: no row) on 4X HDR, 25e9 B/s: 3.125e9 counts of 8 B in 10 s are 10%.
    metrics = by_name(scrape(client), "infiniband_port_congestion_ratio")
    assert metrics[port("cn001", "mlx5_0", 1)] == pytest.approx(0.1, rel=1e-9)
    drawn = chart("cn001", "mlx5_0", 1)
    assert drawn["congestion_pct"][-1] == pytest.approx(10.0, rel=1e-9)
    assert drawn["congestion_unit"] == "8 bytes per count, assumed"
    event = open_congestion()["cn001", 1]
    assert event.message.endswith(
        "congested: 10% of the link's time lost waiting for credits in the last 10 s "
        "(port_xmit_wait at 8 bytes per count, assumed, over 5%)"
    )
