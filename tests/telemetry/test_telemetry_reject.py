"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/validation/schema.py.

Malformed snapshots are rejected with a reason, and nothing of them is stored."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricweb.inventory.models import Device, Node, Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from fabricweb.telemetry.validation.schema import SnapshotRejected
from tests.telemetry.telemetry_support import NODE_EXPORTER, _paths, later, port_of, snapshot


def stored() -> tuple[int, int, int, int]:
    return Node.objects.count(), Device.objects.count(), Port.objects.count(), len(list(samples.between()))


def _set(path, value):
    def mutate(snap):
        target = snap
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path):
    def mutate(snap):
        target = snap
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def _duplicate_device(snap):
    snap["devices"].append(copy.deepcopy(snap["devices"][0]))


P = ("devices", 1, "ports", 0)  # mlx4_0/1 of the node-exporter tree
CASES = [
    ("unknown schema", _set(("schema",), 3), "unknown schema version 3 (this server reads 1, 2)"),
    ("schema as text", _set(("schema",), "1"), "unknown schema version '1'"),
    ("no host", _delete(("host",)), "host: expected text"),
    ("host with a slash", _set(("host",), "cn001/../x"), "is not a host name"),
    ("collected_at without a zone", _set(("collected_at",), "2026-03-01T12:00:00"), "a time with a zone"),
    ("collected_at not a time", _set(("collected_at",), "yesterday"), "ISO 8601"),
    ("collected_at far ahead", _set(("collected_at",), "2999-01-01T00:00:00Z"), "ahead of this server's clock"),
    ("collected_at before 2000", _set(("collected_at",), "1999-12-31T23:59:59Z"), "not a plausible time"),
    ("NaN in a disagreement", _set(("devices", 1, "disagreements"), [{"field": "x", "sysfs": float("nan")}]), "sysfs"),
    ("NUL in a disagreement", _set(("devices", 1, "disagreements"), [{"field": "x", "verbs": "a\x00"}]), "verbs"),
    ("nested disagreement", _set(("devices", 1, "disagreements"), [{"field": "x", "sysfs": [[1]]}]), "sysfs"),
    ("devices not a list", _set(("devices",), {}), "devices: expected a list"),
    ("a device twice", _duplicate_device, "appears twice"),
    ("port number as text", _set((*P, "port"), "1"), "port: expected an integer from 0 to 255"),
    ("negative counter", _set((*P, "counters", "symbol_error"), -1), "null or a counter value"),
    ("counter as float", _set((*P, "counters", "symbol_error"), 1.5), "null or a counter value"),
    ("counter as bool", _set((*P, "counters", "link_downed"), True), "null or a counter value"),
    ("counter past 4 x 2^64", _set((*P, "counters_ext", "port_xmit_data_64"), 1 << 70), "got 1180591620717411303424"),
    ("counter of 1000 bits", _set((*P, "counters", "symbol_error"), 1 << 1000), "got an integer of 1001 bits"),
    ("unknown speed", _set((*P, "rate", "speed"), "GDR"), "rate.speed"),
    ("lanes not a width", _set((*P, "rate", "lanes"), 3), "rate.lanes"),
    ("gbps infinite", _set((*P, "rate", "gbps"), float("inf")), "rate.gbps"),
    ("state id as text", _set((*P, "state", "id"), "4"), "state.id"),
    ("NUL in a string", _set(("devices", 1, "board_id"), "MT\x00"), "board_id"),
    ("unpaired surrogate", _set(("devices", 1, "fw_ver"), "2.\ud800"), "fw_ver"),
    ("capped names a counter the port lacks", _set((*P, "capped"), ["nope"]), "not among its counters"),
    ("errors entry without a path", _set(("errors",), [{"reason": "x"}]), "errors[0].path"),
    ("more devices than a host has", _set(("devices",), [{"name": f"d{i}", "ports": []} for i in range(65)]), "64"),
    (
        "more ports than a host has",
        _set(("devices",), [{"name": f"d{i}", "ports": [{"port": p} for p in range(100)]} for i in range(6)]),
        "600 ports in all, more than the 512 a host has",
    ),
    ("10,000 read errors", _set(("errors",), [{"path": "p", "reason": "r"}] * 10_000), "at most 2000 items"),
]


@pytest.mark.parametrize(("mutate", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_snapshot_is_rejected_with_its_reason_and_nothing_stored(each_db, mutate, reason):
    base = snapshot(NODE_EXPORTER, host="cn002")
    ingest_snapshot(base)
    before = stored()
    bad = later(base, 10, {"symbol_error": 1})
    mutate(bad)

    with pytest.raises(SnapshotRejected) as err:
        ingest_snapshot(bad)

    assert reason in err.value.reason
    assert stored() == before
    assert Node.objects.get(name="cn002").last_collected_at.isoformat().startswith("2026-03-01T12:00:00")


def test_a_rejection_names_the_host_when_it_is_known(each_db):
    bad = snapshot(host="cn077")
    port_of(bad, "mlx5_0", 1)["lid"] = "0x1a"
    with pytest.raises(SnapshotRejected) as err:
        ingest_snapshot(bad)
    assert err.value.host == "cn077"
    assert str(err.value) == (
        "snapshot from cn077 rejected: device mlx5_0/1.lid: expected an integer from 0 to 65535, got '0x1a'"
    )


def test_a_rejected_snapshot_in_a_batch_does_not_stop_the_others(each_db):
    good, bad = snapshot(host="cn001"), snapshot(host="cn002")
    bad["schema"] = 99
    batch = ingest_batch([bad, good])

    assert [r.index for r in batch.rejected] == [1 - 1]
    assert [r.node for r in batch.results] == ["cn001"]
    assert not Node.objects.filter(name="cn002").exists()


# -- random mutations of a valid snapshot -------------------------------------------------

BASE = snapshot(NODE_EXPORTER, host="cn002")


PATHS = [p for p in _paths(BASE) if p]
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(),
    st.text(max_size=300),
    st.sampled_from(["", "\x00", "\ud800", "x" * 300, "4: ACTIVE", "EDR", "2026-03-01T12:00:00Z", "mlx5_0"]),
)
JSONISH = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
)
MUTATION = st.tuples(st.sampled_from(PATHS), st.sampled_from(["set", "delete"]), JSONISH)


def _apply(snap, path, op, value):
    target = snap
    for key in path[:-1]:
        if not isinstance(target, dict | list):
            return
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return  # an earlier mutation removed this path
    if not isinstance(target, dict | list):
        return
    try:
        if op == "delete":
            del target[path[-1]]
        else:
            target[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(MUTATION, min_size=1, max_size=3), n=st.integers(min_value=0, max_value=10**6))
def test_random_mutations_are_stored_whole_or_rejected_whole(each_db, mutations, n):
    snap = later(BASE, n % 3600)
    snap["host"] = f"fuzz{n}"  # a node of its own, so an accepted snapshot is written, not a duplicate
    for path, op, value in mutations:
        _apply(snap, path, op, value)
    before = stored()
    try:
        result = ingest_snapshot(snap)
    except SnapshotRejected as e:
        assert e.reason
        assert stored() == before
    else:
        if result.status == "stored":
            ports = sum(len(d["ports"]) for d in snap["devices"])
            assert len(list(samples.between())) == before[3] + ports


def test_a_snapshot_from_a_clock_23_hours_ahead_is_refused_and_the_node_keeps_being_stored(each_db):
    now = datetime.now(UTC).replace(microsecond=0)
    ingest_snapshot(snapshot(NODE_EXPORTER, host="cn003", at=now - timedelta(seconds=30)))
    with pytest.raises(SnapshotRejected) as err:
        ingest_snapshot(snapshot(NODE_EXPORTER, host="cn003", at=now + timedelta(hours=23)))
    assert "23 h ahead of this server's clock" in err.value.reason
    assert "check the node's clock (NTP)" in err.value.reason
    # The next real poll is stored: the node is not frozen behind a date from tomorrow.
    ingest_snapshot(snapshot(NODE_EXPORTER, host="cn003", at=now))
    assert Node.objects.get(name="cn003").last_collected_at == now


def test_a_node_clock_five_minutes_ahead_is_still_stored(each_db):
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)
    ingest_snapshot(snapshot(NODE_EXPORTER, host="cn004", at=at))
    assert Node.objects.get(name="cn004").last_collected_at == at


def test_an_idle_node_whose_fast_clock_is_set_right_is_stored_again_at_once(each_db):
    """Ordering by the server's receive time: the idle node's counters do not move, yet it is not frozen."""
    now = datetime.now(UTC).replace(microsecond=0)
    fast = snapshot(NODE_EXPORTER, host="cn006", at=now + timedelta(minutes=8))
    ingest_snapshot(fast)
    fixed = copy.deepcopy(fast)  # the same counters (an idle node), dated by the corrected clock
    fixed["collected_at"] = (now + timedelta(seconds=5)).isoformat().replace("+00:00", "Z")
    result = ingest_snapshot(fixed)
    assert (result.status, result.clock_backwards) == ("stored", True)
    assert Node.objects.get(name="cn006").last_collected_at == now + timedelta(seconds=5)


def test_a_late_message_from_before_the_last_poll_still_moves_nothing_back(each_db):
    now = datetime.now(UTC).replace(microsecond=0)
    first = snapshot(NODE_EXPORTER, host="cn007", at=now - timedelta(seconds=20))
    ingest_snapshot(later(first, 10))
    result = ingest_snapshot(first)  # redelivered after the newer one: dated before that one arrived
    assert result.status == "stale"
    assert Node.objects.get(name="cn007").last_collected_at == now - timedelta(seconds=10)


def test_keys_a_disagreement_does_not_have_are_not_stored(each_db):
    snap = snapshot(NODE_EXPORTER, host="cn005")
    snap["devices"][1]["disagreements"] = [{"field": "fw_ver", "sysfs": "1", "verbs": "2", "extra": "x" * 10**6}]
    ingest_snapshot(snap)
    device = Device.objects.get(node__name="cn005", name=snap["devices"][1]["name"])
    assert device.disagreements == [{"field": "fw_ver", "sysfs": "1", "verbs": "2"}]
