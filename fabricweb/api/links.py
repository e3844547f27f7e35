"""A link's state, as SQL: the one definition for /api/v1/links, the dashboard's /fabric/ and its summary.

A link (fabricweb.fabric.models.Link) is a cable the fabric sweeps saw, with its two ends' inventory
ports (`a`, `b`, when in the inventory). Its state comes from those ports, whose up and degraded
flags are the inventory's own (inventory/linkstate.py, kept on the port row), so a link and its
ends never disagree:

- `down`: an end's port is down (the cable pulled, a switch without power, a port disabled);
- `degraded`: both ends up, and an end trained below what it should run at (operator policy,
  else what both ends support, else its history: the port's expected link);
- `up`: both ends up at their expected link;
- `unknown`: the last sweep did not see the link, yet both ends still name each other and no end
  is down: the switch at one end does not answer management datagrams (mute), so nothing is known;
- `gone`: the last sweep did not see it and an end now names another far end: recabled, history
  only (a topology change records it).
"""

from __future__ import annotations

from django.db.models import Case, F, IntegerField, Q, QuerySet, Value, When

STATES = ("down", "unknown", "degraded", "up", "gone")  # worst first
RANK = {state: i for i, state in enumerate(STATES)}

_LIVE = Q(gone_at__isnull=True)
_END_DOWN = Q(a__up=False) | Q(b__up=False)
_END_DEGRADED = Q(a__degraded=True) | Q(b__degraded=True)
# Both ends (those in the inventory) still name each other as their far end: the cable is still there.
_STILL_FACED = (Q(a__isnull=True) | Q(a__peer_label=F("b_label"))) & (Q(b__isnull=True) | Q(b__peer_label=F("a_label")))

STATE = Case(
    When(_LIVE & _END_DOWN, then=Value("down")),
    When(_LIVE & _END_DEGRADED, then=Value("degraded")),
    When(_LIVE, then=Value("up")),
    When(_STILL_FACED & _END_DOWN, then=Value("down")),
    When(_STILL_FACED, then=Value("unknown")),
    default=Value("gone"),
)


def annotate(links: QuerySet) -> QuerySet:
    """`links` with `state` (one of STATES) and `state_rank` (0 for down: worst first)."""
    ranked = Case(*(When(state=s, then=Value(i)) for s, i in RANK.items()), output_field=IntegerField())
    return links.annotate(state=STATE).annotate(state_rank=ranked)
