"""A cable's state from its two ends (LINK_STATES, `link_states`), for /api/v1/links and /fabric/."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Case, F, IntegerField, Q, Value, When

if TYPE_CHECKING:
    from django.db.models import QuerySet


# --- a cable's state, from its two ends ------------------------------------------------------------
#
# A link (fabricweb.fabric.models.Link) is a cable the fabric sweeps saw, with its two ends' inventory
# ports (`a`, `b`, when in the inventory); its state comes from their up and degraded flags (Port.up,
# Port.degraded: statuses.py), so a link and its ends never disagree:
# - `down`: an end's port is down (the cable pulled, a switch without power, a port disabled);
# - `degraded`: both ends up, and an end trained below what it should run at;
# - `up`: both ends up at their expected link;
# - `unknown`: the last sweep did not see the link, yet both ends still name each other and no end is
#   down: the switch at one end does not answer management datagrams (mute), so nothing is known;
# - `gone`: the last sweep did not see it and an end now names another far end: recabled, history only.

LINK_STATES = ("down", "unknown", "degraded", "up", "gone")  # worst first
LINK_RANK = {state: i for i, state in enumerate(LINK_STATES)}
_LIVE = Q(gone_at__isnull=True)
_END_DOWN = Q(a__up=False) | Q(b__up=False)
_END_DEGRADED = Q(a__degraded=True) | Q(b__degraded=True)
# Both ends (those in the inventory) still name each other as their far end: the cable is still there.
_STILL_FACED = (Q(a__isnull=True) | Q(a__peer_label=F("b_label"))) & (Q(b__isnull=True) | Q(b__peer_label=F("a_label")))
LINK_STATE = Case(
    When(_LIVE & _END_DOWN, then=Value("down")),
    When(_LIVE & _END_DEGRADED, then=Value("degraded")),
    When(_LIVE, then=Value("up")),
    When(_STILL_FACED & _END_DOWN, then=Value("down")),
    When(_STILL_FACED, then=Value("unknown")),
    default=Value("gone"),
)


def link_states(links: QuerySet) -> QuerySet:
    """`links` with `state` (one of LINK_STATES) and `state_rank` (0 for down: worst first)."""
    ranked = Case(*(When(state=s, then=Value(i)) for s, i in LINK_RANK.items()), output_field=IntegerField())
    return links.annotate(state=LINK_STATE).annotate(state_rank=ranked)


def link_is_up(state: str) -> bool | None:
    """A link state's up: None when unknown."""
    return None if state == "unknown" else state in ("up", "degraded")
