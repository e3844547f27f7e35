"""Up, down and degraded, as SQL expressions: the same definition filters, counts and shows.

- up: ACTIVE (or ACTIVE_DEFER) and still reported by its node; everything else is down,
  a vanished port included whatever its last state was.
- degraded: up, and trained below its expected link in speed or in width, judged
  separately as collectors.link.judge_link does; unknown on either side is not degraded.
"""

from __future__ import annotations

from django.db.models import BooleanField, Case, F, IntegerField, Q, QuerySet, Value, When

from collectors.facts import UP_STATE_IDS
from collectors.link import SPEEDS
from fabricweb.inventory.models import Port

UP = Q(state_id__in=sorted(UP_STATE_IDS), vanished_at__isnull=True)


def _rank(field: str) -> Case:
    # Speed names sort by the table's order, not alphabetically; an unknown name ranks as NULL.
    return Case(*(When(**{field: s.name}, then=Value(i)) for i, s in enumerate(SPEEDS)), output_field=IntegerField())


def _flag(condition: Q) -> Case:
    # CASE, not the bare condition: a NULL state must read as False, not as unknown.
    return Case(When(condition, then=Value(True)), default=Value(False), output_field=BooleanField())


DEGRADED = (
    UP
    & Q(api_speed_rank__isnull=False, api_expected_rank__isnull=False)
    & Q(lanes__isnull=False, expected_lanes__isnull=False)
    & (Q(api_speed_rank__lt=F("api_expected_rank")) | Q(lanes__lt=F("expected_lanes")))
)


def annotate(ports: QuerySet[Port]) -> QuerySet[Port]:
    """`ports` with `api_up` and `api_degraded`, booleans for filtering, counting and output.

    Prefixed names: Port.is_up exists and judges the state alone, without the vanished check.
    """
    return ports.annotate(
        api_speed_rank=_rank("speed"),
        api_expected_rank=_rank("expected_speed"),
    ).annotate(
        api_up=_flag(UP),
        api_degraded=_flag(DEGRADED),
    )
