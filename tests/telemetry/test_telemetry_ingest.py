"""Covers fabricweb/inventory/readings.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/results.py, fabricweb/inventory/portfacts/, fabricweb/telemetry/storage/apply.py,
fabricweb/telemetry/storage/store.py; through them fabricweb/telemetry/handed.py,
fabricweb/telemetry/storage/budget.py.

Ingest of real fixture snapshots, on SQLite and PostgreSQL (the each_db fixture)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fabricweb.inventory import readings
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.history.samples import Sample, between, of_port
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from fabricweb.telemetry.results import DUPLICATE, STALE, STORED
from tests.telemetry.telemetry_support import NODE_EXPORTER, PROCFS, T0, later, port_of, snapshot

U32 = (1 << 32) - 1


def port(node: str, device: str, number: int) -> Port:
    """The stored port with its stored readings (raw counters, ring, state_polls)."""
    row = Port.objects.select_related("device__node").get(device__node__name=node, device__name=device, number=number)
    return readings.attach([row])[0]


def samples(node: str, device: str, number: int) -> list[Sample]:
    # Insertion order (the rows' ids): the poll order, even when the clock stepped back.
    return sorted(of_port(port(node, device, number)), key=lambda s: s.id)


def test_a_new_node_registers_itself_with_its_devices_and_ports(each_db):
    result = ingest_snapshot(snapshot())

    assert result.status == STORED and result.new_node
    assert (result.ports_ingested, result.samples_written) == (4, 4)
    node = Node.objects.get(name="cn001")
    assert node.last_collected_at == T0
    assert sorted(Device.objects.filter(node=node).values_list("name", flat=True)) == ["hfi1_0", "mlx4_0", "mlx5_0"]
    p = port("cn001", "mlx5_0", 1)
    assert (p.state_id, p.state_name, p.rate_gbps, p.lanes, p.speed) == (4, "ACTIVE", 25.0, 1, "EDR")
    assert p.counters["port_xmit_data"] == 11523046035392  # bytes, as the snapshot carried them
    assert (p.best_speed, p.best_lanes, p.ever_up) == ("EDR", 1, True)
    first = samples("cn001", "mlx5_0", 1)
    assert len(first) == 1 and first[0].interval_s is None and first[0].xmit_bytes is None


def test_the_same_snapshot_twice_stores_once(each_db):
    snap = snapshot()
    ingest_snapshot(snap)
    again = ingest_snapshot(snap)

    assert again.status == DUPLICATE and again.samples_written == 0
    assert len(list(between())) == 4
    assert Node.objects.count() == 1 and Port.objects.count() == 4


def test_deltas_are_stored_per_poll_with_the_interval(each_db):
    s0 = snapshot()
    ingest_snapshot(s0)
    result = ingest_snapshot(later(s0, 10, {"symbol_error": 7, "port_xmit_data": 4_000, "port_rcv_packets": 12}))

    s = samples("cn001", "hfi1_0", 1)[-1]
    assert (s.interval_s, s.symbol_error, s.xmit_bytes, s.rcv_packets, s.rcv_bytes) == (10.0, 7, 4_000, 12, 0)
    assert not s.reset and not s.capped
    obs = next(o for o in result.observations if o.port.device.name == "hfi1_0")
    assert obs.deltas["symbol_error"] == 7 and obs.interval_s == 10.0
    assert obs.previous is not None and obs.previous.state_id == 4 and not obs.first_poll
    p = port("cn001", "hfi1_0", 1)
    assert p.recent == [[T0.timestamp() + 10, 10.0, {"symbol_error": 7}]]


def test_a_missed_poll_gives_the_delta_over_the_real_interval(each_db):
    s0 = snapshot()
    ingest_snapshot(s0)
    ingest_snapshot(later(s0, 30, {"port_rcv_packets": 300}))

    s = samples("cn001", "mlx4_0", 2)[-1]
    assert (s.interval_s, s.rcv_packets) == (30.0, 300)


def test_it_records_a_reset_instead_of_a_negative_delta(each_db):
    s0 = snapshot()
    ingest_snapshot(later(s0, 0, {"symbol_error": 500}))
    result = ingest_snapshot(later(s0, 10, {"symbol_error": 3}))  # went from 500 to 3: perfquery -R

    s = samples("cn001", "mlx4_0", 1)[-1]
    assert s.symbol_error == 3 and s.reset
    assert port("cn001", "mlx4_0", 1).last_reset_at == s.ts
    assert result.resets == 4  # symbol_error on each of the 4 ports


def test_a_capped_counter_has_an_unknown_delta_and_says_so(each_db):
    s0 = snapshot(NODE_EXPORTER, host="cn002")
    ingest_snapshot(s0)
    result = ingest_snapshot(later(s0, 10, {"port_xmit_data_64": 400}))

    s = samples("cn002", "mlx4_0", 1)[-1]
    assert s.xmit_wait is None and s.capped
    assert s.xmit_bytes == 400  # from counters_ext, which has not stopped
    assert port("cn002", "mlx4_0", 1).capped == ["port_xmit_wait"]
    obs = next(o for o in result.observations if str(o.port) == "cn002 mlx4_0/1")
    assert obs.capped == ("port_xmit_wait",) and obs.deltas["port_xmit_wait"] is None
    assert result.capped == 1
    assert port("cn002", "mlx4_0", 1).recent[-1][2] == {"port_xmit_wait": None}


def test_data_and_packets_come_from_counters_ext_when_the_port_has_both(each_db):
    s0 = snapshot(NODE_EXPORTER, host="cn002")
    assert port_of(s0, "mlx4_0", 2)["counters"]["port_rcv_data"] == 0  # the 32-bit file is useless here
    ingest_snapshot(s0)
    ingest_snapshot(later(s0, 10, {"port_rcv_data_64": 8_000, "port_rcv_packets_64": 2}))

    s = samples("cn002", "mlx4_0", 2)[-1]
    assert (s.rcv_bytes, s.rcv_packets) == (8_000, 2)


def test_a_port_without_counters_stores_unknown_not_zero(each_db):
    s0 = snapshot(NODE_EXPORTER, host="cn002")  # i40iw0: every counter reads N/A (no PMA)
    ingest_snapshot(s0)
    ingest_snapshot(later(s0, 10))

    s = samples("cn002", "i40iw0", 1)[-1]
    assert s.symbol_error is None and s.rcv_bytes is None and not s.capped
    assert port("cn002", "i40iw0", 1).recent == [[T0.timestamp() + 10, 10.0, {}]]  # no PMA: Port.counters says so


def test_an_older_snapshot_does_not_move_state_backwards(each_db):
    s0 = snapshot()
    newer = later(s0, 10, {"symbol_error": 2}, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"})
    ingest_snapshot(newer)
    late = ingest_snapshot(later(s0, 5, {"symbol_error": 1}))  # delivered after the newer one

    assert late.status == STALE and late.samples_written == 0
    p = port("cn001", "hfi1_0", 1)
    assert p.speed == "QDR" and p.counters["symbol_error"] == 2
    assert Node.objects.get(name="cn001").last_collected_at == T0.replace(second=10)


def test_a_node_clock_that_stepped_back_keeps_the_new_reading_as_baseline(each_db):
    s0 = snapshot()
    now = T0 + timedelta(seconds=30)  # received as it was sent: the step back crosses into the hour before
    ingest_snapshot(s0, now=now)
    # Stamped 60 s earlier, but its counters moved on: the node's clock was corrected backwards.
    stepped = ingest_snapshot(later(s0, -60, {"port_xmit_data": 4_000}), now=now)
    after = ingest_snapshot(later(s0, -50, {"port_xmit_data": 4_800}), now=now + timedelta(seconds=10))

    assert stepped.status == STORED and stepped.clock_backwards
    _, second, third = samples("cn001", "mlx5_0", 1)
    assert second.interval_s == -60.0 and second.xmit_bytes is None
    assert third.interval_s == 10.0 and third.xmit_bytes == 800
    assert after.status == STORED


def test_vanished_devices_and_ports_are_marked_and_cleared_on_return(each_db):
    s0 = snapshot()
    ingest_snapshot(s0)
    gone = later(s0, 10)
    gone["devices"] = [d for d in gone["devices"] if d["name"] != "hfi1_0"]
    mlx4 = next(d for d in gone["devices"] if d["name"] == "mlx4_0")
    mlx4["ports"] = [p for p in mlx4["ports"] if p["port"] == 1]
    result = ingest_snapshot(gone)
    ingest_snapshot(later(gone, 10))

    assert sorted(result.vanished) == ["hfi1_0", "mlx4_0/2"]
    hfi = Device.objects.get(name="hfi1_0")
    # Counted until judged vanished (one poll), then left alone until it returns (telemetry/storage/budget.py).
    assert hfi.vanished_at is not None and hfi.missed_polls == 1
    assert port("cn001", "mlx4_0", 2).missed_polls == 1
    assert port("cn001", "hfi1_0", 1).vanished_at is not None

    back = ingest_snapshot(later(s0, 30, {"symbol_error": 1}))
    assert sorted(back.returned) == ["hfi1_0", "hfi1_0/1", "mlx4_0/2"]
    p = port("cn001", "mlx4_0", 2)
    assert p.vanished_at is None and p.missed_polls == 0
    assert samples("cn001", "mlx4_0", 2)[-1].interval_s == 30.0  # the delta spans the absence


def test_absence_after_a_failed_listing_is_not_vanishing(each_db):
    s0 = snapshot()
    ingest_snapshot(s0)
    blind = later(s0, 10)
    blind["devices"] = []
    blind["errors"] = [{"path": "/sys/class/infiniband", "reason": "EACCES (permission denied)"}]
    result = ingest_snapshot(blind)

    assert result.vanished == []
    assert not Device.objects.filter(vanished_at__isnull=False).exists()


def test_the_best_link_is_kept_when_the_link_trains_lower(each_db):
    s0 = snapshot()
    ingest_snapshot(s0)
    ingest_snapshot(later(s0, 10, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"}))

    p = port("cn001", "hfi1_0", 1)
    assert (p.speed, p.lanes) == ("QDR", 4)
    assert (p.best_speed, p.best_lanes) == ("EDR", 4)


def test_the_best_link_counts_only_while_active(each_db):
    s0 = snapshot()
    down = later(s0, 0, state={"id": 1, "name": "DOWN"}, rate={"gbps": 0.0, "lanes": None, "speed": None})
    ingest_snapshot(down)
    ingest_snapshot(later(s0, 10, state={"id": 2, "name": "INIT"}))

    p = port("cn001", "hfi1_0", 1)
    assert (p.best_speed, p.best_lanes, p.ever_up) == (None, None, False)
    assert p.state_polls == 1
    ingest_snapshot(later(s0, 20))
    ingest_snapshot(later(s0, 30))
    p = port("cn001", "hfi1_0", 1)
    assert (p.best_speed, p.best_lanes, p.ever_up, p.state_polls) == ("EDR", 4, True, 2)


def test_a_batch_stores_many_nodes_and_polls_in_time_order(each_db):
    a, b = snapshot(host="cn001"), snapshot(NODE_EXPORTER, host="cn002")
    # Out of order on purpose: ingest orders each node's snapshots by time.
    batch = ingest_batch([later(a, 10, {"symbol_error": 4}), b, a, later(b, 10, {"port_xmit_data_64": 40})])

    assert [r.status for r in batch.results] == [STORED] * 4
    assert [r.node for r in batch.results] == ["cn001", "cn002", "cn001", "cn002"]
    assert samples("cn001", "mlx4_0", 1)[-1].symbol_error == 4
    assert samples("cn002", "mlx4_0", 2)[-1].xmit_bytes == 40
    assert len(list(between())) == 14


@pytest.mark.parametrize("source", [PROCFS, NODE_EXPORTER], ids=["procfs", "node-exporter"])
def test_every_fixture_tree_ingests_and_its_raw_counters_round_trip(each_db, source):
    snap = snapshot(source)
    ingest_snapshot(snap)
    for dev in snap["devices"]:
        for p in dev["ports"]:
            row = port("cn001", dev["name"], p["port"])
            assert (row.counters, row.counters_ext, row.capped) == (p["counters"], p["counters_ext"], p["capped"])
            assert row.hw_counters == p["hw_counters"]


def test_the_stored_up_and_degraded_follow_links_changed_by_ingest(each_db):
    # Ingest writes links with raw UPDATEs (store.update_rows); the database computes the
    # generated columns on those writes too, and they agree with portfacts' Python for one port.
    from fabricweb.inventory import portfacts

    def flags() -> tuple[bool, bool]:
        p = Port.objects.get(device__name="hfi1_0", number=1)
        assert (portfacts.is_up(p), portfacts.is_degraded(p)) == (p.up, p.degraded)
        return p.up, p.degraded

    s0 = snapshot()
    ingest_snapshot(s0)
    assert flags() == (True, False)  # no expectation yet: not degraded
    Port.objects.filter(device__name="hfi1_0").update(expected_speed="EDR", expected_lanes=4)
    assert flags() == (True, False)

    ingest_snapshot(later(s0, 10, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"}))
    assert flags() == (True, True)
    ingest_snapshot(later(s0, 20, rate={"gbps": 25.0, "lanes": 1, "speed": "EDR"}))
    assert flags() == (True, True)  # width alone
    ingest_snapshot(later(s0, 30))
    assert flags() == (True, False)
    ingest_snapshot(later(s0, 40, state={"id": 1, "name": "DOWN"}, rate={"gbps": 0.0, "lanes": None, "speed": None}))
    assert flags() == (False, False)
    ingest_snapshot(later(s0, 50, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"}))
    assert flags() == (True, True)
    gone = later(s0, 60, rate={"gbps": 40.0, "lanes": 4, "speed": "QDR"})
    gone["devices"] = [d for d in gone["devices"] if d["name"] != "hfi1_0"]
    ingest_snapshot(gone)
    assert flags() == (False, False)  # vanished: down whatever its last state
