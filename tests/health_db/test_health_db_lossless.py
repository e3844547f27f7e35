"""Covers fabricweb/health/rules/lossless.py, fabricweb/telemetry/storage/apply.py and collectors/sim/roce.py: a
simulated RoCE node's lossless Ethernet through real ingest, on both databases: a pause storm and
a CNP storm each open exactly their own finding, in an Ethernet engineer's words; a clean RoCE node opens none."""

from __future__ import annotations

from fabricweb.health.models import Event
from fabricweb.inventory import readings
from fabricweb.inventory.models import Port
from tests.health_db.health_db_fabric import SimFabric, open_events

ROCE_PORT = "cn006/mlx5_0/1"
LOSSLESS_KINDS = ("pfc_pause_received", "pfc_pause_sent", "pause_storm", "cnp_storm", "roce_packet_loss", "rx_discards")


def _events_on(node: str) -> dict[str, Event]:
    return {key: e for key, e in open_events().items() if f":{node}" in key}


def test_a_clean_roce_node_opens_nothing(each_db, fabric, outcomes):
    fabric.polls(8)
    # Its ports pause a little at every poll, under every threshold: their judgement is reused (quiet.py).
    assert fabric.answering()[-1] == "cn006" and (outcomes[-1].ports, outcomes[-1].reused) == (2, 2)
    assert _events_on("cn006") == {}
    assert not Event.objects.filter(kind__in=LOSSLESS_KINDS).exists()
    # Its lossless counters reached ingest: stored with the port's hw_counters, PFC beside them.
    (port,) = readings.attach([Port.objects.get(device__node__name="cn006", device__name="mlx5_0", number=1)])
    assert port.hw_counters["ethtool.rx_prio3_pause_duration"] > 0
    assert "np_cnp_sent" in port.hw_counters and "ethtool.tx_pause_storm_error_events" in port.hw_counters


def test_a_pause_storm_opens_its_own_finding_and_no_other(each_db, fabric):
    fabric.polls(3)
    fabric.fault(f"{ROCE_PORT}:pause-storm")
    fabric.polls(3)
    events = _events_on("cn006")
    assert set(events) == {f"pause_storm:{ROCE_PORT}"}  # not also pause sent, nor the drops it says itself
    event = events[f"pause_storm:{ROCE_PORT}"]
    assert event.severity == "critical"
    assert event.message == (
        "cn006 mlx5_0/1: PFC pause storm: the NIC's watchdog found the port stalled past its timeout 1 time(s) in "
        "the last 10 s and stopped sending pause (tx_pause_storm_error_events); it sent PFC pause on priority 3 "
        "for 80% of the time, and dropped 200,000 frames on arrival (rx_discards_phy). This host stopped draining "
        "its receive queue: look at the host (driver, PCIe, a hung application), not the network; a storm left "
        "running spreads head-of-line blocking through the switches upstream"
    )
    fabric.clear(f"{ROCE_PORT}:pause-storm")
    fabric.polls(3)
    assert _events_on("cn006") == {}
    assert fabric.alarms == {f"pause_storm:{ROCE_PORT}": "critical"}


def test_a_cnp_storm_opens_its_own_finding_and_no_other(each_db, fabric):
    fabric.polls(3)
    fabric.fault(f"{ROCE_PORT}:cnp-storm")
    fabric.polls(2, batch=True)
    events = _events_on("cn006")
    assert set(events) == {f"cnp_storm:{ROCE_PORT}"}
    event = events[f"cnp_storm:{ROCE_PORT}"]
    assert event.severity == "warning"
    message = event.message
    assert message.startswith("cn006 mlx5_0/1: ECN/CNP storm over the last 10 s (over 10,000 CNPs/s): ")
    assert "CNPs/s (rp_cnp_handled): switches keep marking ECN on its flows out" in message
    assert "CNPs/s (np_cnp_sent) for " in message and "ECN-marked packets/s arriving" in message
    assert message.endswith("check the switches' ECN marking thresholds and where the traffic converges")
    assert event.details["cnp_handled_per_s"] >= 150_000
    fabric.clear(f"{ROCE_PORT}:cnp-storm")
    fabric.polls(3)
    assert _events_on("cn006") == {}
    assert fabric.alarms == {f"cnp_storm:{ROCE_PORT}": "warning"}


def test_the_storms_on_a_roce_node_leave_the_infiniband_nodes_alone(each_db, sim_dir):
    fab = SimFabric(sim_dir, 6, faults=(f"{ROCE_PORT}:pause-storm", "cn006/mlx5_1:cnp-storm"))
    fab.polls(4)
    assert set(_events_on("cn006")) == {f"pause_storm:{ROCE_PORT}", "cnp_storm:cn006/mlx5_1/1"}
    assert set(open_events()) == set(_events_on("cn006"))
