"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/history/retention.py,
fabricweb/telemetry/history/rollup.py, fabricweb/telemetry/ingest.py.

Rollups into 5-minute and hourly buckets, and retention, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from fabricweb.telemetry.history import samples as raw
from fabricweb.telemetry.history.retention import prune
from fabricweb.telemetry.history.rollup import rollup
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.models import PortRollup
from tests.telemetry.telemetry_support import T0, later, snapshot

FIVE, HOUR = PortRollup.FIVE_MINUTES, PortRollup.HOUR
QDR = {"gbps": 40.0, "lanes": 4, "speed": "QDR"}
DOWN = {"id": 1, "name": "DOWN"}


def poll_every_minute(minutes: int, start: int = 0) -> None:
    """One snapshot a minute from T0 + start; the hfi1_0 port drops to QDR at minute 7 and is DOWN at minute 8."""
    base = snapshot()
    for m in range(start, start + minutes):
        changes = {"rate": QDR} if m == 7 else {"state": DOWN} if m == 8 else {}
        ingest_snapshot(later(base, 60 * m, {"symbol_error": m, "port_xmit_data": 4_000 * m * m}, **changes))


def rolled(period: int, device: str = "hfi1_0") -> list[PortRollup]:
    return list(PortRollup.objects.filter(period_s=period, port__device__name=device).order_by("bucket"))


def test_complete_five_minute_buckets_sum_their_samples(each_db):
    poll_every_minute(17)
    written = rollup(now=T0 + timedelta(minutes=19))  # less a minute of grace: 12:00-12:15 are complete

    rows = rolled(FIVE)
    assert [r.bucket for r in rows] == [T0 + timedelta(minutes=m) for m in (0, 5, 10)]
    assert written[FIVE] == 3 * 4  # 3 buckets x 4 ports
    for r in rows:
        in_bucket = raw.of_port(r.port, r.bucket, r.bucket + timedelta(minutes=5))
        sums = [sum(v for s in in_bucket if (v := getattr(s, c)) is not None) for c in ("symbol_error", "xmit_bytes")]
        assert [r.symbol_error, r.xmit_bytes] == sums
        assert r.samples == 5
    first, second, _ = rows
    assert first.symbol_error == 4  # one a minute; the first poll has no delta
    # Minute 4 moved 4000*(16-9) bytes in 60 s: the fastest poll of the first bucket.
    assert first.max_xmit_bps == 4_000 * 7 / 60
    assert (second.worst_state_id, second.min_speed, second.min_lanes) == (1, "QDR", 4)
    assert (first.worst_state_id, first.min_speed) == (4, "EDR")


def test_rollup_runs_are_idempotent_and_pick_up_late_samples(each_db):
    poll_every_minute(9)
    rollup(now=T0 + timedelta(minutes=11))
    before = {(r.port_id, r.bucket): (r.samples, r.symbol_error) for r in PortRollup.objects.all()}
    rollup(now=T0 + timedelta(minutes=11))
    assert {(r.port_id, r.bucket): (r.samples, r.symbol_error) for r in PortRollup.objects.all()} == before

    # A sample of the newest rolled bucket arrives late (minute 9, within 12:05-12:10)...
    poll_every_minute(1, start=9)
    rollup(now=T0 + timedelta(minutes=11, seconds=30))
    assert rolled(FIVE)[-1].samples == 5


def test_hours_roll_up_from_five_minute_buckets(each_db):
    poll_every_minute(3, start=0)
    poll_every_minute(3, start=58)  # 12:58-13:00
    rollup(now=T0 + timedelta(hours=1, minutes=10))

    hour = rolled(HOUR)
    assert [r.bucket for r in hour] == [T0]
    fives = rolled(FIVE)
    assert hour[0].samples == sum(r.samples for r in fives if r.bucket < T0 + timedelta(hours=1))
    assert hour[0].symbol_error == sum(r.symbol_error or 0 for r in fives if r.bucket < T0 + timedelta(hours=1))


def test_nothing_to_roll_up_is_not_an_error(each_db):
    assert rollup(now=T0) == {FIVE: 0, HOUR: 0}


def test_prune_deletes_what_is_past_retention_and_keeps_the_rest(each_db, settings):
    settings.FABRIC_RETAIN_RAW = 48 * 3600.0
    settings.FABRIC_RETAIN_5MIN = 30 * 86400.0
    settings.FABRIC_RETAIN_1H = 365 * 86400.0
    poll_every_minute(12)
    rollup(now=T0 + timedelta(hours=2))
    samples, fives, hours = (
        len(list(raw.between())),
        PortRollup.objects.filter(period_s=FIVE).count(),
        PortRollup.objects.filter(period_s=HOUR).count(),
    )
    assert samples and fives and hours

    none = {"sample_hours": 0, "rollup_5min_days": 0, "rollup_1h_months": 0}
    assert prune(now=T0 + timedelta(hours=47)) == none
    # Raw samples go a whole hour at a time (PostgreSQL: a partition), once the hour ended 48 h ago.
    assert prune(now=T0 + timedelta(hours=48, minutes=59))["sample_hours"] == 0
    assert len(list(raw.between())) == samples
    assert prune(now=T0 + timedelta(hours=49))["sample_hours"] == 1
    assert not list(raw.between())
    # 5-minute rollups go a UTC day at a time, once the day (2026-03-01) ended 30 days ago.
    assert prune(now=T0 + timedelta(days=30, hours=11)) == none
    assert PortRollup.objects.filter(period_s=FIVE).count() == fives
    assert prune(now=T0 + timedelta(days=30, hours=12)) == {**none, "rollup_5min_days": 1}
    assert not PortRollup.objects.filter(period_s=FIVE).exists()
    # Hourly rollups go a UTC month at a time, once the month (March 2026) ended a year ago.
    assert prune(now=T0 + timedelta(days=366)) == none
    assert PortRollup.objects.filter(period_s=HOUR).count() == hours
    assert prune(now=T0.replace(year=2027, month=4, day=1, hour=0)) == {**none, "rollup_1h_months": 1}
    assert not PortRollup.objects.exists()


def test_deltas_no_link_could_carry_never_overflow_the_rollup(each_db):
    # Two polls claiming 2^63-1 bytes each in one 5-minute bucket: stored as unknown, not summed.
    huge = (1 << 63) - 1
    base = snapshot()
    ingest_snapshot(base)
    ingest_snapshot(later(base, 60, {"port_xmit_data": huge}))
    ingest_snapshot(later(base, 120, {"port_xmit_data": 2 * huge}))
    ingest_snapshot(later(base, 180, {"port_xmit_data": 2 * huge + 4_000}))
    written = rollup(now=T0 + timedelta(minutes=10))
    assert written[FIVE] > 0
    row = rolled(FIVE)[0]
    assert row.xmit_bytes == 4_000  # only the plausible poll


def test_a_sample_from_years_back_costs_one_jump_not_a_walk_of_every_bucket(
    each_db, django_assert_max_num_queries, settings
):
    # Raw samples kept for 30 years: on PostgreSQL a snapshot far older than the newest samples (here, those other
    # tests left) is otherwise refused before it creates a partition (telemetry/ingest.py, _backdated).
    settings.FABRIC_RETAIN_RAW = 30 * 365 * 86400.0
    # A node whose clock was reset sent one snapshot dated 2000; the fabric's real polls follow.
    ingest_snapshot(snapshot(at=T0.replace(year=2000)))
    poll_every_minute(11)
    # PostgreSQL: 4 rollup partitions made on the way (a day and a month each for 2000 and 2026), 3 statements each.
    with django_assert_max_num_queries(20 if each_db == "sqlite" else 32):
        written = rollup(now=T0 + timedelta(minutes=13))
    buckets = sorted({r.bucket for r in PortRollup.objects.filter(period_s=FIVE)})
    assert buckets == [T0.replace(year=2000), T0, T0 + timedelta(minutes=5)]
    assert written[FIVE] == 3 * 4
