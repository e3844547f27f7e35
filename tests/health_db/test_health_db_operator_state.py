"""Covers fabricweb/health/models.py, fabricweb/inventory/models.py.

Acknowledgements and silences: stored, matched by glob, in force only between their times."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from fabricweb.health.models import Acknowledgement, Event, Silence, silence_matches, silencing
from fabricweb.inventory.models import Device, Node, Port


@pytest.mark.parametrize(
    ("globs", "target", "expected"),
    [
        (("cn0*", "*", "*", "*"), ("cn042", "mlx5_0", 1, "down"), True),
        (("cn0*", "*", "*", "*"), ("gpu01", "mlx5_0", 1, "down"), False),
        (("cn042", "mlx5_*", "1", "degraded"), ("cn042", "mlx5_1", 1, "degraded"), True),
        (("cn042", "mlx5_*", "1", "degraded"), ("cn042", "mlx5_1", 2, "degraded"), False),
        (("cn042", "*", "*", "symbol_*"), ("cn042", "mlx5_0", 1, "down"), False),
        (("CN042", "*", "*", "*"), ("cn042", None, None, "stale"), False),  # case-sensitive, as host names are
        (("cn042", "*", "*", "*"), ("cn042", None, None, "stale"), True),  # a node event: * covers what it lacks
        (("cn042", "mlx5_0", "*", "*"), ("cn042", None, None, "stale"), False),
        (("cn042", "mlx5_0", "*", "pcie"), ("cn042", "mlx5_0", None, "pcie"), True),
    ],
)
def test_it_matches_events_by_node_device_port_and_kind(globs, target, expected):
    assert silence_matches(globs, *target) is expected


def _event(now) -> Event:
    node = Node.objects.create(name="cn042", first_seen_at=now)
    device = Device.objects.create(node=node, name="mlx5_0", first_seen_at=now)
    port = Port.objects.create(device=device, number=1, first_seen_at=now)
    return Event.objects.create(
        node=node,
        device=device,
        port=port,
        kind="down",
        severity="critical",
        key="down:cn042/mlx5_0/1",
        message="cn042 mlx5_0/1: port is DOWN",
        opened_at=now,
        updated_at=now,
    )


def _silence(now, **fields) -> Silence:
    values = {
        "reason": "cable swap",
        "created_by_name": "alice",
        "created_at": now,
        "starts_at": now,
        "ends_at": now + timedelta(hours=1),
        **fields,
    }
    return Silence.objects.create(**values)


def test_only_silences_in_force_are_active(each_db):
    now = timezone.now()
    current = _silence(now, node_glob="cn04*")
    _silence(now - timedelta(hours=3), ends_at=now - timedelta(hours=2))  # over
    _silence(now + timedelta(hours=1), ends_at=now + timedelta(hours=2), kind_glob="down")  # not yet
    _silence(now, lifted_at=now, lifted_by_name="bob")  # lifted early
    assert list(Silence.objects.active(now)) == [current]
    event = Event.objects.select_related("node", "device", "port").get(pk=_event(now).pk)
    assert silencing(event, Silence.objects.active(now)) == current
    assert silencing(event, Silence.objects.active(now + timedelta(minutes=59))) == current
    later = Silence.objects.active(now + timedelta(hours=1))  # `current` is over; the one for "down" begins
    assert silencing(event, later).kind_glob == "down"
    assert silencing(event, Silence.objects.active(now + timedelta(hours=2))) is None


def test_a_silence_must_end_after_it_starts(each_db):
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        _silence(now, ends_at=now)


def test_one_acknowledgement_per_event_and_it_goes_with_the_event(each_db):
    now = timezone.now()
    event = _event(now)
    Acknowledgement.objects.create(event=event, by_name="alice", note="on it", at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Acknowledgement.objects.create(event=event, by_name="bob", at=now)
    event.delete()
    assert not Acknowledgement.objects.exists()
