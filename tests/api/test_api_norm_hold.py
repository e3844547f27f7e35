"""Covers fabricweb/health/records/actions.py, fabricweb/api/views/nodes.py; through them
fabricweb/inventory/rowwrites.py.

A node held out of the fabric norm, as GET /api/v1/nodes and /api/v1/nodes/<name> say it."""

from __future__ import annotations

from django.utils import timezone

from fabricweb.health.records.actions import accept_norm
from fabricweb.inventory.models import Node
from tests.api.api_support import store_fixture_node


def test_the_node_api_says_why_a_node_is_held_out_of_the_norm_and_who_accepted_it(each_db, api):
    store_fixture_node("cn001")
    assert api.json("/api/v1/nodes/cn001")["norm_hold"] == {
        "reason": None,
        "since": None,
        "accepted_by": None,
        "accepted_at": None,
    }
    reason = "reported 512 ports on 4 HCAs (MT4123), had 2 ports on 2 HCAs (MT4123)"
    Node.objects.filter(name="cn001").update(norm_hold_reason=reason, norm_hold_since=timezone.now())
    (listed,) = api.json("/api/v1/nodes")["nodes"]
    assert listed["norm_hold"]["reason"] == reason and listed["norm_hold"]["since"].endswith("Z")
    accept_norm(Node.objects.get(name="cn001"), by="olga")
    held = api.json("/api/v1/nodes/cn001")["norm_hold"]
    assert (held["reason"], held["since"], held["accepted_by"]) == (None, None, "olga")
    assert held["accepted_at"].endswith("Z")
