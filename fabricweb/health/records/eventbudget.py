"""The most events one node may hold open (FABRIC_NODE_MAX_OPEN_EVENTS): a host that reports hundreds of
broken ports, honestly or not, must not flood the events page, the notifications or the database.

Past the bound the most severe findings open first; the rest wait, counted and logged, until there is room:
they are judged again at every poll, so nothing is lost that is still true when room comes.
"""

from __future__ import annotations

from .lifecycle import Action, Op


def within(actions: list[Action], open_now: int, bound: int) -> tuple[list[Action], int]:
    """`actions` with the OPENs past `bound` (counting the `open_now` events the node holds) left out, the least
    severe first; and how many were left out."""
    opens = [a for a in actions if a.op is Op.OPEN]
    room = max(bound - open_now, 0)
    if len(opens) <= room:
        return actions, 0
    kept = {id(a) for a in sorted(opens, key=lambda a: -a.severity.rank)[:room]}  # stable: the rules' order next
    return [a for a in actions if a.op is not Op.OPEN or id(a) in kept], len(opens) - room
