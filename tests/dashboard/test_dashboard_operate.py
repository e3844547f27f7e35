"""Covers fabricweb/inventory/portfacts/, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/port.py,
fabricweb/dashboard/views/actions.py, fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/wall.py,
fabricweb/dashboard/views/overview.py.

The problem list and the grid say the same thing (a PCIe problem marks its HCA's port cells, a flapping port
keeps one mark, advice is apart and marks nothing), and the operator's actions on the rows: "Silence this"
for 1 h, 4 h, 1 d or a chosen time, acknowledge once (who, when), the baseline confirmed, shown and undone,
the events' reason column. On SQLite and PostgreSQL, through the real ingest and health engine."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from fabricweb.health.models import Acknowledgement, Event, LinkPolicy, Silence
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port

# Glyphs drawn from an emoji font (a stock Debian Chromium has none: a box): the pictographic planes, the
# miscellaneous symbols and the Dingbats that are emoji (✔ ✖ ❌ ❗...; not ✕, the down mark).
DINGBAT_EMOJI = "\u2702\u2705\u2708-\u270d\u270f\u2712\u2714\u2716\u271d\u2721\u2728\u2733\u2734\u2744\u2747"
EMOJI = re.compile(f"[\U0001f000-\U0001faff\u2600-\u26ff{DINGBAT_EMOJI}\u274c\u274e\u2753-\u2757\u2763\u2764]")


def _messages(response) -> list[str]:
    storage = get_messages(response.wsgi_request)
    return [str(m) for m in storage._queued_messages] or [str(m) for m in storage]


def _cells(html: str, node: str, device: str) -> dict[int, tuple[str, str, str]]:
    """Port number -> (class, title, mark) of each grid cell of node/device."""
    pattern = rf'<a class="c ([a-z_]+)" href="/ports/{node}/{device}/(\d+)/"(?: title="([^"]*)")?>([^<]*)</a>'
    return {int(n): (health, title, mark) for health, n, title, mark in re.findall(pattern, html)}


def _open(kind: str) -> Event:
    return Event.objects.get(kind=kind, resolved_at__isnull=True)


def test_it_marks_the_port_cells_of_an_hca_with_a_pcie_problem_pcie_limited_not_erroring(operator, faulty):
    faulty.fabric.add_fault("cn001/mlx5_0:pcie=GEN3x8")
    faulty.poll()
    pcie = _open("pcie")
    assert pcie.severity == "warning" and pcie.port_id is None
    response = operator.get("/")
    html = response.content.decode()
    cells = _cells(str(response.context["grid"]), "cn001", "mlx5_0")
    ports = Port.objects.filter(device__node__name="cn001", device__name="mlx5_0").count()
    assert len(cells) == ports > 0
    for health, title, mark in cells.values():
        assert (health, mark) == ("pcie_limited", "⇣")
        assert "PCIe-limited, no errors (PCIe link too slow for the port)" in title
    assert [e.kind for e in response.context["problems"]] == ["degraded", "down", "pcie"]
    counts = response.context["counts"]
    assert (counts.pcie_limited, counts.erroring) == (ports, 0)
    assert f'<b id="count-pcie-limited">{ports}</b> ⇣ PCIe-limited' in html
    assert '<span class="c pcie_limited">⇣</span> PCIe-limited' in html  # the legend
    assert "cn001 mlx5_0: PCIe Gen3 x8" in html
    assert sum(counts.by_health.values()) == counts.ports  # the tiles still partition the ports
    # The node page's port table, the port page, the state filter, the CSV and the wall say it too.
    node = operator.text("/nodes/cn001/")
    assert node.count('class="c pcie_limited"') >= ports and 'class="c erroring"' not in node
    assert '<span class="health">PCIe-limited</span>' in operator.text("/ports/cn001/mlx5_0/1/")
    filtered = str(operator.get("/", {"state": "pcie_limited"}).context["grid"])
    assert set(_cells(filtered, "cn001", "mlx5_0")) == set(cells) and "cn002" not in filtered
    csv = b"".join(operator.get("/ports.csv", {"node": "cn001", "device": "mlx5_0"}).streaming_content).decode()
    assert csv.count(",PCIe-limited,") == ports
    wall = operator.text("/wall/")
    assert '<span class="tile pcie_limited">⇣</span> PCIe-limited' in wall and "⇣ PCIe-limited</div>" in wall


def test_it_marks_a_port_erroring_when_it_has_errors_besides_its_pcie_problem(operator, faulty):
    faulty.fabric.add_fault("cn001/mlx5_0:pcie=GEN3x8", "cn001/mlx5_0/1:symbol-errors=50")
    faulty.poll()
    faulty.poll()
    assert _open("pcie") and _open("symbol_errors").port.number == 1
    response = operator.get("/")
    health, title, mark = _cells(str(response.context["grid"]), "cn001", "mlx5_0")[1]
    assert (health, mark) == ("erroring", "!")
    assert "PCIe link too slow for the port" in title and "symbol errors" in title


def test_a_flapping_port_keeps_one_mark_and_the_counts_hold_at_every_poll(operator, faulty):
    faulty.fabric.add_fault("cn001/mlx5_0/1:flap")
    for _ in range(4):  # down, up, down, up: the flapping event opens
        faulty.poll()
    assert _open("flapping").port.number == 1
    marks, up_at_poll = set(), []
    for _ in range(5):  # the simulator takes the link down every other step
        faulty.poll()
        response = operator.get("/")
        health, _, mark = _cells(str(response.context["grid"]), "cn001", "mlx5_0")[1]
        counts = response.context["counts"]
        marks.add((health, mark, counts.flapping, counts.down, counts.erroring))
        up_at_poll.append(
            portfacts.is_up(Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1))
        )
    assert marks == {("flapping", "↕", 1, 1, 0)}  # and cn003's down port stays the one down
    assert set(up_at_poll) == {True, False}  # down at some polls, up at others
    html = operator.text("/")
    assert '<b id="count-flapping">1</b> ↕ flapping' in html
    assert operator.get("/", {"state": "flapping"}).context["shown_ports"] == 1
    assert '<span class="c flapping">↕</span> <span class="health">flapping</span>' in operator.text(
        "/ports/cn001/mlx5_0/1/"
    )


def test_advice_is_listed_apart_from_problems_and_marks_no_port(operator, faulty):
    port = Port.objects.get(device__node__name="cn001", device__name="mlx5_0", number=1)
    now = timezone.now()
    Event.objects.create(
        node=port.device.node,
        device=port.device,
        port=port,
        kind="capped_counters",
        severity="info",
        key="capped_counters:cn001/mlx5_0/1",
        message="cn001 mlx5_0/1: counters stuck at their maximum (symbol_error)",
        reason="",
        opened_at=now,
        updated_at=now,
    )
    response = operator.get("/")
    html = response.content.decode()
    assert [e.kind for e in response.context["advice"]] == ["capped_counters"]
    assert "capped_counters" not in [e.kind for e in response.context["problems"]]
    problems, advice = html.index('id="live-problems"'), html.index('id="live-advice"')
    assert problems < html.index('id="live-grid"') < advice < html.index("counters stuck at their maximum")
    assert "Advice (1 open, not problems)" in html
    assert _cells(str(response.context["grid"]), "cn001", "mlx5_0")[1][0] == "up"
    assert response.context["counts"].erroring == 0


@pytest.mark.parametrize(("duration", "hours"), [("1h", 1), ("4h", 4), ("1d", 24)])
def test_silence_this_silences_the_row_for_the_chosen_duration(operator, faulty, duration, hours):
    event = _open("down")
    before = timezone.now()
    response = operator.post(f"/events/{event.pk}/silence", {"duration": duration, "next": "/"})
    assert response["Location"] == "/"
    silence = Silence.objects.get()
    globs = (silence.node_glob, silence.device_glob, silence.port_glob, silence.kind_glob)
    assert globs == ("cn003", "mlx5_1", "1", "down") and silence.created_by_name == "olga"
    assert abs((silence.ends_at - before) - timedelta(hours=hours)) < timedelta(seconds=30)
    assert silence.reason.startswith("silenced from its row: cn003 mlx5_1/1: port down")
    shown = f"silenced until {silence.ends_at:%Y-%m-%d %H:%M} UTC by olga"
    home = operator.get("/")
    row = re.search(rf'<li class="sev-critical" data-event="{event.pk}">(.*?)</li>', home.content.decode(), re.S)[1]
    assert shown in row and "Silence this" not in row
    assert shown in operator.text("/events/")
    # The other problem's row still offers it.
    assert operator.text("/").count("<summary>Silence this</summary>") == 1


def test_silence_this_until_a_chosen_time_and_what_it_refuses(operator, faulty):
    event = _open("down")
    until = (timezone.now() + timedelta(hours=7)).replace(second=0, microsecond=0)
    data = {"duration": "custom", "until": until.strftime("%Y-%m-%dT%H:%M"), "reason": "RMA booked"}
    operator.post(f"/events/{event.pk}/silence", data)
    silence = Silence.objects.get()
    assert (silence.ends_at, silence.reason) == (until, "RMA booked")
    Silence.objects.all().delete()

    past = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    far = (timezone.now() + timedelta(days=91)).strftime("%Y-%m-%dT%H:%M")
    for data, said in (
        ({"duration": "custom"}, "until (UTC): pick the time the silence ends"),
        ({"duration": "custom", "until": past}, "until (UTC): must be in the future"),
        ({"duration": "custom", "until": far}, "until (UTC): at most 90 days ahead"),
        ({"duration": "custom", "until": "tomorrow"}, "until (UTC): Enter a valid date/time."),
        ({"duration": "forever"}, "duration: choose 1 h, 4 h, 1 d or a time"),
        ({}, "duration: This field is required."),
    ):
        response = operator.post(f"/events/{event.pk}/silence", data)
        assert _messages(response) == [said], data
    assert not Silence.objects.exists()
    Event.objects.filter(pk=event.pk).update(resolved_at=timezone.now())
    response = operator.post(f"/events/{event.pk}/silence", {"duration": "1h"})
    assert _messages(response) == ["This event is resolved: there is nothing to silence."]
    operator.post("/events/999999/silence", {"duration": "1h"}, status=404)
    assert not Silence.objects.exists()


def test_acknowledge_says_who_and_when_and_is_offered_once(operator, faulty):
    event = _open("degraded")
    home = operator.text("/")
    assert home.count('<button type="submit">Acknowledge</button>') == 2  # both problems
    operator.post(f"/events/{event.pk}/acknowledge", {"next": "/"})
    ack = Acknowledgement.objects.get(event=event)
    home = operator.text("/")
    row = re.search(rf'data-event="{event.pk}">(.*?)</li>', home, re.S)[1]
    assert f"acknowledged by olga at {ack.at:%Y-%m-%d %H:%M} UTC" in row
    assert "Acknowledge</button>" not in row
    assert home.count('<button type="submit">Acknowledge</button>') == 1  # the other problem only
    events = operator.text("/events/")
    row = re.search(rf'data-event="{event.pk}">(.*?)</tr>', events, re.S)[1]
    assert "acknowledged by olga at" in row and "Acknowledge</button>" not in row


def test_the_baseline_is_confirmed_shown_with_who_and_when_and_undone(operator, faulty):
    page = "/ports/cn002/mlx4_0/1/"
    port = Port.objects.get(device__node__name="cn002", device__name="mlx4_0", number=1)
    best_before = (port.best_speed, port.best_lanes)
    html = operator.text(page)
    assert 'action="/ports/cn002/mlx4_0/1/baseline"' not in html  # no one-click accept
    assert 'href="/ports/cn002/mlx4_0/1/baseline">Accept the current link' in html
    confirm = operator.text(f"{page}baseline")
    assert "Accept the current link as baseline?" in confirm
    assert "runs at\n    <b>10 Gb/s (1X QDR)</b>" in confirm and "expected at 40 Gb/s (4X QDR)" in confirm
    assert not LinkPolicy.objects.exists()  # asking is not accepting

    operator.post(f"{page}baseline", {"confirm": "yes"})
    policy = LinkPolicy.objects.get()
    assert (policy.accepted_by, policy.lanes) == ("olga", 1)
    assert timezone.now() - policy.accepted_at < timedelta(minutes=1)
    html = operator.text(page)
    assert (
        f"Baseline: 10 Gb/s (1X QDR), accepted by olga at {policy.accepted_at:%Y-%m-%d %H:%M} UTC "
        "(link policy “baseline cn002 mlx4_0/1”)." in html
    )
    assert "Undo this baseline</button>" in html
    port.refresh_from_db()
    assert (port.best_lanes, port.expected_lanes) == (1, 1)

    response = operator.post(f"{page}baseline/undo")
    assert "Undid the baseline accepted by olga" in _messages(response)[0]
    assert not LinkPolicy.objects.exists()
    port.refresh_from_db()
    assert (port.best_speed, port.best_lanes) == best_before and port.expected_lanes == 4
    html = operator.text(page)
    assert "Undo this baseline" not in html and "Accept the current link as this port's baseline" in html
    response = operator.post(f"{page}baseline/undo")
    assert _messages(response) == ["cn002 mlx4_0/1: no baseline to undo"]


def test_the_status_column_says_what_last_changed_each_event_and_the_reason_the_evidence(operator, faulty):
    down, degraded = _open("down"), _open("degraded")
    Event.objects.filter(pk=degraded.pk).update(reason=f"was warning, now critical: {degraded.message}")
    Event.objects.filter(pk=down.pk).update(clean_polls=1)

    def column(name: str, status: str, pk: int) -> str:
        html = operator.text("/events/", {"status": status})
        cell = rf'data-event="{pk}">.*?<td class="status"><span class="state">(.*?)</span>'
        if name == "reason":
            cell = rf'data-event="{pk}">.*?<td class="reason">(.*?)(?:<span|</td>)'
        return re.search(cell, html, re.S)[1]

    assert column("status", "open", degraded.pk) == "open: was warning, now critical"
    assert column("status", "open", down.pk) == "open: not found for 1 poll: resolves after 3 clean polls"
    # The reason is the evidence: the sentence after the port, which the problem column names.
    assert column("reason", "open", down.pk) == down.message.removeprefix("cn003 mlx5_1/1: ")
    Event.objects.filter(pk=down.pk).update(resolved_at=timezone.now(), reason="clear for 3 polls")
    assert column("status", "resolved", down.pk) == "resolved: clear for 3 polls"
    Event.objects.filter(pk=degraded.pk).update(reason=degraded.message)
    assert column("status", "open", degraded.pk) == "open: found at its last poll"


def test_no_page_needs_an_emoji_font(operator, faulty):
    event = _open("down")
    operator.post(f"/events/{event.pk}/silence", {"duration": "1h"})
    operator.post(f"/events/{event.pk}/acknowledge", {})
    for page in (
        "/",
        "/events/",
        "/ports/cn003/mlx5_1/1/",
        "/nodes/cn003/",
        "/ports/cn002/mlx4_0/1/baseline",
        "/wall/",
    ):
        html = operator.text(page)
        assert not EMOJI.findall(html), (page, EMOJI.findall(html))
    assert "silenced until" in operator.text("/")
