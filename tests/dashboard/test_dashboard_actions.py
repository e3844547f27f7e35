"""Covers fabricweb/health/models.py, fabricweb/dashboard/views/actions.py, fabricweb/dashboard/views/events.py,
fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/wall.py; through them fabricweb/dashboard/csvexport.py,
fabricweb/dashboard/eventrange.py, fabricweb/dashboard/forms.py, fabricweb/dashboard/rowactions.py,
fabricweb/dashboard/series.py, fabricweb/dashboard/switches.py, fabricweb/dashboard/timerange.py,
fabricweb/dashboard/views/common.py, fabricweb/tokens.py.

Operator actions on SQLite and PostgreSQL: POST with CSRF, 403 for a viewer, bad input as a message."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.messages import get_messages
from django.utils import timezone

from fabricweb.health.models import Acknowledgement, Event, LinkPolicy, Silence
from tests.dashboard.dashboard_support import Browser


def _open(kind: str) -> Event:
    return Event.objects.get(kind=kind, resolved_at__isnull=True)


def _messages(response) -> list[str]:
    """The messages this response queued (the page it redirects to would show them)."""
    storage = get_messages(response.wsgi_request)
    return [str(m) for m in storage._queued_messages] or [str(m) for m in storage]


def test_an_operator_acknowledges_an_event_and_sees_it_marked(operator, faulty):
    event = _open("degraded")
    response = operator.post(f"/events/{event.pk}/acknowledge", {"note": "cable ordered", "next": "/events/"})
    assert response["Location"] == "/events/"
    ack = Acknowledgement.objects.get(event=event)
    assert (ack.by_name, ack.note, ack.by) == ("olga", "cable ordered", operator.user)
    html = operator.text("/events/")
    when = f"{ack.at:%Y-%m-%d %H:%M} UTC"
    assert f"acknowledged by olga at {when}: cable ordered" in html
    assert f"acknowledged by olga at {when}" in operator.text("/")
    assert operator.get("/events/", {"status": "acknowledged"}).context["events"].paginator.count == 1
    # Again: refused, saying who and when; the first note stays.
    response = operator.post(f"/events/{event.pk}/acknowledge", {"note": "swapped"})
    assert _messages(response) == [f"Already acknowledged by olga at {when}."]
    assert Acknowledgement.objects.get(event=event).note == "cable ordered"


def test_a_resolved_event_cannot_be_acknowledged(operator, faulty):
    event = _open("down")
    Event.objects.filter(pk=event.pk).update(resolved_at=timezone.now())
    response = operator.post(f"/events/{event.pk}/acknowledge", {"note": "late"})
    assert _messages(response) == ["This event is resolved: there is nothing to acknowledge."]
    assert not Acknowledgement.objects.exists()


def test_a_viewer_sees_no_action_and_is_refused_every_action(viewer, faulty):
    event = _open("down")
    for page in ("/events/", "/ports/cn002/mlx4_0/1/", "/"):
        html = viewer.text(page)
        assert "Acknowledge</button>" not in html and "baseline</button>" not in html and "Silence</button>" not in html
        assert "Silence this" not in html and "Accept the current link" not in html
    silence = Silence.objects.create(
        reason="x",
        created_by_name="olga",
        created_at=timezone.now(),
        starts_at=timezone.now(),
        ends_at=timezone.now() + timedelta(hours=1),
    )
    for path, data in (
        (f"/events/{event.pk}/acknowledge", {"note": "forged"}),
        ("/silences/", {"node_glob": "cn*", "reason": "forged", "ends_at": "2099-01-01T00:00"}),
        (f"/silences/{silence.pk}/lift", {}),
        ("/ports/cn002/mlx4_0/1/baseline", {}),
        ("/ports/cn002/mlx4_0/1/baseline/undo", {}),
        (f"/events/{event.pk}/silence", {"duration": "1h"}),
        ("/wall/links/", {"name": "forged"}),
    ):
        viewer.post(path, data, status=403)
    viewer.get("/wall/links/", status=403)
    viewer.get("/ports/cn002/mlx4_0/1/baseline", status=403)
    assert not Acknowledgement.objects.exists() and Silence.objects.count() == 1
    assert Silence.objects.get().lifted_at is None and not LinkPolicy.objects.exists()


def test_actions_need_a_post_with_a_csrf_token(each_db, faulty):
    from tests.dashboard.dashboard_support import make_user

    strict = Browser(make_user("olga", "operator"), enforce_csrf_checks=True)
    event = _open("down")
    strict.post(f"/events/{event.pk}/acknowledge", {"note": "no token"}, status=403)
    strict.get(f"/events/{event.pk}/acknowledge", status=405)
    assert not Acknowledgement.objects.exists()


def test_an_operator_silences_by_glob_and_the_event_shows_silenced(operator, faulty):
    until = (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    data = {"node_glob": "cn00?", "kind_glob": "down", "reason": "maintenance on rack 3", "ends_at": until}
    response = operator.post("/silences/", data)
    assert _messages(response)[0].startswith("Silenced cn00? */* down until")
    silence = Silence.objects.get()
    assert (silence.created_by_name, silence.device_glob, silence.port_glob) == ("olga", "*", "*")
    silenced = operator.get("/events/", {"status": "silenced"}).context["events"]
    assert [e.kind for e in silenced] == ["down"]
    assert f"silenced until {silence.ends_at:%Y-%m-%d %H:%M} UTC by olga" in operator.text("/events/")

    operator.post(f"/silences/{silence.pk}/lift", {})
    silence.refresh_from_db()
    assert silence.lifted_at is not None and silence.lifted_by_name == "olga"
    assert operator.get("/events/", {"status": "silenced"}).context["events"].paginator.count == 0


def test_a_bad_silence_is_refused_with_a_message(operator, faulty):
    past = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    far = (timezone.now() + timedelta(days=200)).strftime("%Y-%m-%dT%H:%M")
    soon = (timezone.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    for data, words in (
        ({"node_glob": "cn*", "reason": "r", "ends_at": past}, "until (UTC): must be in the future"),
        ({"node_glob": "cn*", "reason": "r", "ends_at": far}, "until (UTC): at most 90 days ahead"),
        ({"node_glob": "cn*", "reason": "r", "ends_at": "tomorrow"}, "until (UTC): Enter a valid date/time."),
        ({"node_glob": "cn/*", "reason": "r", "ends_at": soon}, "node: use letters, digits"),
        ({"reason": "everything", "ends_at": soon}, "name at least a node, device, port or kind"),
        ({"node_glob": "cn*", "ends_at": soon}, "reason: This field is required."),
    ):
        messages = _messages(operator.post("/silences/", data))
        assert any(words in m for m in messages), (data, messages)
    assert not Silence.objects.exists()


def test_an_operator_accepts_the_current_link_as_baseline(operator, faulty):
    response = operator.post("/ports/cn002/mlx4_0/1/baseline")
    assert response["Location"] == "/ports/cn002/mlx4_0/1/"
    policy = LinkPolicy.objects.get()
    assert (policy.name, policy.speed, policy.lanes) == ("baseline cn002 mlx4_0/1", "QDR", 1)
    assert "Accepted the current link as baseline" in _messages(response)[0]
    # A down port cannot be a baseline: said, not a 500.
    response = operator.post("/ports/cn003/mlx5_1/1/baseline")
    assert "cannot accept the current link as baseline" in _messages(response)[0]
    assert LinkPolicy.objects.count() == 1
    operator.post("/ports/cn003/mlx9_9/1/baseline", status=404)


def test_next_never_leaves_the_site(operator, faulty):
    event = _open("down")
    response = operator.post(f"/events/{event.pk}/acknowledge", {"next": "https://evil.example/"})
    assert response["Location"] == "/events/"
