"""Covers fabricweb/inventory/models.py, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/actions.py.

A node held out of the fabric norm, on its page, and an operator accepting it (SQLite and PostgreSQL)."""

from __future__ import annotations

from django.contrib.messages import get_messages
from django.utils import timezone

from fabricweb.inventory.models import Node
from tests.dashboard.dashboard_support import Browser, make_user

REASON = "reported 512 ports on 4 HCAs (MT4123), had 2 ports on 2 HCAs (MT4123)"


def hold(name: str) -> None:
    """What ingest leaves on a node whose hardware jumped (fabricweb.telemetry.storage.normhold)."""
    Node.objects.filter(name=name).update(norm_hold_reason=REASON, norm_hold_since=timezone.now())


def test_an_operator_sees_why_a_node_is_held_and_accepts_it(operator, faulty):
    hold("cn002")
    html = operator.text("/nodes/cn002/")
    assert "held out of the fabric norm</span> since " in html
    assert f"UTC: {REASON}." in html
    assert "Accept as normal</button>" in html

    response = operator.post("/nodes/cn002/accept-norm")
    assert response["Location"] == "/nodes/cn002/"
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == ["Accepted what cn002 reports as normal: it votes in the fabric norm again, once per HCA model."]
    node = Node.objects.get(name="cn002")
    assert (node.norm_hold_reason, node.norm_hold_since, node.norm_accepted_by) == ("", None, "olga")
    assert node.norm_accepted_at is not None
    html = operator.text("/nodes/cn002/")
    assert "held out of the fabric norm" not in html
    assert "Its hardware was accepted as normal by olga at " in html

    again = operator.post("/nodes/cn002/accept-norm")
    assert [str(m) for m in get_messages(again.wsgi_request)] == [
        "cn002: not held out of the fabric norm, nothing to accept"
    ]
    operator.post("/nodes/cn999/accept-norm", status=404)


def test_a_viewer_sees_the_hold_but_cannot_accept_it(viewer, faulty):
    hold("cn002")
    html = viewer.text("/nodes/cn002/")
    assert f"UTC: {REASON}." in html and "Accept as normal</button>" not in html
    viewer.post("/nodes/cn002/accept-norm", status=403)
    assert Node.objects.get(name="cn002").norm_hold_reason == REASON


def test_accepting_needs_a_post_with_a_csrf_token_and_a_login(each_db, faulty):
    hold("cn002")
    strict = Browser(make_user("olga", "operator"), enforce_csrf_checks=True)
    strict.post("/nodes/cn002/accept-norm", status=403)
    strict.get("/nodes/cn002/accept-norm", status=405)
    anonymous = Browser()
    assert anonymous.post("/nodes/cn002/accept-norm")["Location"].startswith("/login/")
    assert Node.objects.get(name="cn002").norm_hold_reason == REASON
