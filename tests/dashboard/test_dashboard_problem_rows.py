"""Covers fabricweb/dashboard/problemrows.py, fabricweb/health/rules/findings.py, fabricweb/dashboard/views/port.py.

Problem rows in columns: severity, where (the port ↔ the far end of its cable, linked), what (the
kind in two or three words), since, the actions, and the sentence as the row's detail; a far end's name (the
device's own words) escaped. On SQLite and PostgreSQL, through the real ingest and health engine."""

from __future__ import annotations

import re

from django.utils.html import escape

from fabricweb.dashboard.problemrows import WHAT
from fabricweb.health.models import Event
from fabricweb.health.rules.findings import Kind
from fabricweb.inventory.models import Port


def _row(html: str, event: Event) -> dict[str, str]:
    """Column class -> the markup in it, of the event's problem row on the overview."""
    row = re.search(rf'<li class="sev-\w+" data-event="{event.pk}">(.*?)\n  </li>', html, re.S)[1]
    return dict(re.findall(r'<span class="(col-\w+|detail)[^"]*"[^>]*>(.*?)</span>\n', row + "\n", re.S))


def test_it_gives_each_problem_row_severity_where_what_since_and_actions_and_keeps_the_sentence(operator, faulty):
    degraded = Event.objects.get(kind="degraded", resolved_at__isnull=True)
    cols = _row(operator.text("/"), degraded)
    assert '<span class="sev sev-critical">critical</span>' in cols["col-sev"]
    assert cols["col-where"] == '<a href="/ports/cn002/mlx4_0/1/">cn002 mlx4_0/1</a>'
    assert cols["col-what"] == "link degraded"
    assert cols["col-since"].startswith(f"since {degraded.opened_at:%Y-%m-%d %H:%M:%S} (")
    assert '<button type="submit">Acknowledge</button>' in cols["col-actions"]
    assert cols["detail"].startswith(escape(degraded.message))
    html_head = operator.text("/").split('<li class="cols-head"', 1)[1].split("</li>", 1)[0]
    assert re.findall(r"<span>(\w+)</span>", html_head) == ["severity", "where", "what", "since", "actions"]


def test_it_names_the_far_end_of_the_cable_in_the_where_column_escaped(operator, faulty):
    down = Event.objects.get(kind="down", resolved_at__isnull=True)
    Port.objects.filter(pk=down.port_id).update(peer_label="leaf<b>01</b> port 3")  # a switch names itself
    cols = _row(operator.text("/"), down)
    assert cols["col-where"] == '<a href="/ports/cn003/mlx5_1/1/">cn003 mlx5_1/1</a> ↔ leaf&lt;b&gt;01&lt;/b&gt; port 3'
    assert cols["col-what"] == "port down"


def test_it_says_every_kind_in_two_or_three_words():
    assert set(WHAT) == set(Kind)
    assert all(2 <= len(words.split()) <= 3 for words in WHAT.values()), WHAT
