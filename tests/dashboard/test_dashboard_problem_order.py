"""Covers fabricweb/dashboard/newness.py, fabricweb/dashboard/marks.py, fabricweb/dashboard/views/wall.py,
fabricweb/dashboard/views/overview.py.

New problems stand out and the counts add up: problems opened in the last few minutes are marked
"new", the overview sorts newest first on request, the wall puts the new ones first and cuts the oldest of the
least severe; the overview's port tiles partition the host ports; the wall's headline is green only with
nothing open, and its legend has every health the overview shows. On SQLite and PostgreSQL, through the
real ingest and health engine (the `faulty` fabric) with events added where a test needs a given age."""

from __future__ import annotations

import re
from datetime import timedelta
from types import SimpleNamespace

from django.utils import timezone

from fabricweb.dashboard import newness
from fabricweb.dashboard.marks import HEALTHS
from fabricweb.health.models import Event
from tests.api.api_support import event, port


def _age(kind: str, minutes: float) -> Event:
    """The open `kind` event, made `minutes` old."""
    e = Event.objects.get(kind=kind, resolved_at__isnull=True)
    e.opened_at = timezone.now() - timedelta(minutes=minutes)
    e.save(update_fields=["opened_at"])
    return e


def _rows(html: str) -> list[tuple[str, bool]]:
    """(event id, marked new) of each problem row of the overview's problem list, in order."""
    problems = html.split('<section id="live-problems"', 1)[1].split("</section>", 1)[0]
    rows = re.findall(r'<li class="sev-\w+" data-event="(\d+)">(.*?)</li>', problems, re.S)
    return [(pk, '<span class="new"' in body) for pk, body in rows]


def test_it_marks_only_problems_opened_in_the_last_minutes_new(viewer, faulty):
    old = _age("down", 60)
    young = _age("degraded", 2)
    marked = dict(_rows(viewer.text("/")))
    assert marked == {str(old.pk): False, str(young.pk): True}


def test_it_sorts_the_overview_newest_first_on_request(viewer, faulty):
    down, degraded = _age("down", 30), _age("degraded", 50)
    now = timezone.now()
    symbol = event(port("cn001", "mlx5_0", 1), "symbol_errors", "warning", now - timedelta(minutes=1))
    default = [pk for pk, _ in _rows(viewer.text("/"))]
    assert default == [str(e.pk) for e in (degraded, down, symbol)]  # critical first, then oldest first
    newest = [pk for pk, _ in _rows(viewer.text("/", {"sort": "newest"}))]
    assert newest == [str(e.pk) for e in (symbol, down, degraded)]


def test_it_puts_new_problems_first_on_the_wall_and_the_oldest_of_the_least_severe_last(viewer, faulty):
    down, degraded = _age("down", 30), _age("degraded", 50)
    now = timezone.now()
    p = port("cn001", "mlx5_0", 1)
    new_warning = event(p, "symbol_errors", "warning", now - timedelta(minutes=1))
    old_warning = event(p, "rcv_errors", "warning", now - timedelta(hours=3))
    wall = viewer.get("/wall/").context
    assert [e.pk for e in wall["problems"]] == [new_warning.pk, down.pk, degraded.pk, old_warning.pk]
    assert (wall["open_problems"], wall["new_problems"], wall["not_sent"]) == (4, 1, 0)
    html = viewer.text("/wall/")
    assert html.count('<span class="new">new</span>') == 1 and '<span class="new">1 new</span>' in html


def test_it_orders_the_wall_new_first_then_by_severity_newest_first():
    now = timezone.now()

    def e(pk, severity, minutes):
        return SimpleNamespace(pk=pk, severity=severity, opened_at=now - timedelta(minutes=minutes))

    events = [e(1, "critical", 90), e(2, "warning", 1), e(3, "critical", 10), e(4, "warning", 20), e(5, "critical", 3)]
    assert [x.pk for x in newness.wall_order(events, now)] == [2, 5, 3, 1, 4]


def test_it_partitions_the_host_ports_so_the_tiles_sum_to_the_total(viewer, faulty):
    # An up port at its expected link with symbol errors is "erroring", not also "up and healthy".
    event(port("cn001", "mlx5_0", 1), "symbol_errors", "warning", timezone.now())
    html = viewer.text("/")
    parts = {
        health: int(n)
        for health, n in re.findall(r'<div class="count (\w+)" data-part><b id="count-[\w-]+">(\d+)</b>', html)
    }
    total = int(re.search(r'<b id="count-ports">(\d+)</b> host ports:', html)[1])
    counts = viewer.get("/").context["counts"]
    assert sum(parts.values()) == total == counts.ports == 6  # 3 hosts' ports
    assert (parts["down"], parts["degraded"], parts["erroring"]) == (1, 1, 1)
    assert parts["up"] == counts.by_health["up"] == total - 3 - counts.not_connected
    assert "up and healthy" in html


def test_it_keeps_the_walls_headline_from_green_while_problems_are_open(viewer, faulty):
    html = viewer.text("/wall/")
    assert re.search(r'<div class="big open" id="wall-healthy"><b>\d+</b> / \d+ host ports up and healthy', html)
    Event.objects.filter(resolved_at__isnull=True).update(resolved_at=timezone.now())
    assert '<div class="big up" id="wall-healthy">' in viewer.text("/wall/")


def test_it_gives_every_health_the_overview_shows_a_legend_entry_on_the_wall(viewer, faulty):
    html = viewer.text("/wall/")
    entry = r'<span class="entry" data-health="(\w+)"><span class="tile \1">([^<]*)</span> ([^<]+)</span>'
    legend = re.findall(entry, html)
    assert [h for h, _, _ in legend] == list(HEALTHS)
    assert ("flapping", "↕", "flapping") in legend
