"""Covers fabricweb/dashboard/porthealth.py, fabricweb/dashboard/grid.py, fabricweb/dashboard/hostgrid.py,
fabricweb/dashboard/overviewmodel.py, fabricweb/dashboard/views/port.py.

The plain overview drawn again only for the hosts that changed (fabricweb/dashboard/hostgrid.py) is, byte for
byte, the overview built from scratch (porthealth.fabric_view and grid.render), after random changes to ports,
events and staleness written as ingest, the health engine and the staleness beat write them."""

from __future__ import annotations

import random

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fabricweb.dashboard import grid, hostgrid, overviewmodel, porthealth
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from fabricweb.inventory.rowwrites import update_ports
from tests.api.api_support import event

KINDS = (("symbol_errors", "warning"), ("flapping", "critical"), ("congestion", "warning"), ("pcie_slow", "info"))


def from_scratch() -> tuple:
    counts, cells = porthealth.fabric_view({})
    return counts, str(grid.render(cells)), len(cells)


def change_something(rng: random.Random) -> str:
    ports = list(Port.objects.filter(device__node__kind=Node.Kind.HOST).select_related("device__node"))
    target = rng.choice(ports)
    what = rng.choice(("down", "up", "slower", "vanished", "event", "device event", "resolve", "severity", "stale"))
    now = timezone.now()
    if what == "down":
        update_ports(Port.objects.filter(pk=target.pk), state_id=1, phys_state_id=3)
    elif what == "up":
        update_ports(Port.objects.filter(pk=target.pk), state_id=4, phys_state_id=5, vanished_at=None)
    elif what == "slower":
        update_ports(Port.objects.filter(pk=target.pk), lanes=1, rate_gbps=25.0)
    elif what == "vanished":
        update_ports(Port.objects.filter(pk=target.pk), vanished_at=now)
    elif what in ("event", "device event"):
        kind, severity = rng.choice(KINDS)
        opened = event(target, kind, severity, now)
        if what == "device event":
            Event.objects.filter(pk=opened.pk).update(port=None)
    elif what == "resolve":
        Event.objects.filter(pk__in=Event.objects.filter(resolved_at__isnull=True).values("pk")[:1]).update(
            resolved_at=now
        )
    elif what == "severity":
        Event.objects.filter(resolved_at__isnull=True).update(severity=rng.choice(("critical", "warning", "info")))
    else:
        node = target.device.node
        Node.objects.filter(pk=node.pk).update(stale=not node.stale)
    if what in ("down", "up", "slower", "vanished"):  # a stored batch writes its node's last ingest with its ports
        Node.objects.filter(pk=target.device.node_id).update(last_ingested_at=now)
    return f"{what} {target.device.node.name}/{target.device.name}/{target.number}"


def test_the_overview_drawn_host_by_host_equals_one_drawn_from_scratch_after_random_changes(viewer, faulty):
    rng = random.Random(27)
    assert hostgrid.build() == from_scratch()  # every block drawn: nothing kept yet
    done = []
    for step in range(40):
        done.append(change_something(rng))
        if step % 10 == 9:
            faulty.poll()  # a stored batch: every port written again, a fault's port down
            done.append("poll")
        counts, html, shown = hostgrid.build()
        assert (counts, str(html), shown) == from_scratch(), done
        model = overviewmodel.overview({})
        assert (model.counts, str(model.grid), model.shown_ports) == from_scratch(), done
    # The page serves it: the grid the browser gets is the one drawn from scratch.
    assert str(grid.render(porthealth.fabric_view({})[1])) in viewer.text("/")


def test_a_host_that_did_not_change_keeps_its_block_and_a_changed_one_is_drawn_again(viewer, faulty):
    hostgrid.build()
    with CaptureQueriesContext(connection) as kept:
        hostgrid.build()
    down = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    update_ports(Port.objects.filter(pk=down.pk), state_id=1, phys_state_id=3)
    with CaptureQueriesContext(connection) as one_host:
        counts, html, _shown = hostgrid.build()
    # One query more: the changed host's ports. Unchanged, every host was kept (the fingerprint read in SQL
    # equals the one made from the rows its block was drawn from) and no port row was read.
    assert len(one_host) == len(kept) + 1
    assert 'href="/ports/cn001/mlx5_0/1/" title="cn001 mlx5_0/1: down' in html
    assert counts.down == from_scratch()[0].down
    faulty.poll()  # the next batch brings it back up, as the simulator still has it
    assert 'href="/ports/cn001/mlx5_0/1/">' in str(hostgrid.build()[1])
