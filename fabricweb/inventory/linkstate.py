"""Up, down and degraded, as SQL expressions: the one definition of both.

- up: ACTIVE (or ACTIVE_DEFER) and still reported by its node; everything else is down,
  a vanished port included whatever its last state was.
- degraded: up, and trained below its expected link in speed or in width, judged
  separately as collectors.link.judge_link does; unknown on either side is not degraded.

The database keeps both on the port row (Port.up and Port.degraded, stored generated
columns built from UP_FLAG and DEGRADED_FLAG): it computes them at every write, the ORM's,
ingest's raw UPDATEs and the health rules' alike, so readers filter and count plain
columns instead of evaluating the CASEs for every row of every page and scrape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import BooleanField, Case, F, IntegerField, Q, Value, When
from django.db.models.lookups import IsNull, LessThan

from collectors.facts import UP_STATE_IDS
from collectors.link import SPEEDS

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from .models import Port

UP = Q(state_id__in=sorted(UP_STATE_IDS), vanished_at__isnull=True)


def _rank(field: str) -> Case:
    # Speed names sort by the table's order, not alphabetically; an unknown name ranks as NULL.
    return Case(*(When(**{field: s.name}, then=Value(i)) for i, s in enumerate(SPEEDS)), output_field=IntegerField())


def _flag(condition: Q) -> Case:
    # CASE, not the bare condition: a NULL state must read as False, not as unknown.
    return Case(When(condition, then=Value(True)), default=Value(False), output_field=BooleanField())


_SPEED, _EXPECTED_SPEED = _rank("speed"), _rank("expected_speed")
DEGRADED = (
    UP
    & Q(IsNull(_SPEED, False), IsNull(_EXPECTED_SPEED, False))
    & Q(lanes__isnull=False, expected_lanes__isnull=False)
    & (Q(LessThan(_SPEED, _EXPECTED_SPEED)) | Q(lanes__lt=F("expected_lanes")))
)
UP_FLAG, DEGRADED_FLAG = _flag(UP), _flag(DEGRADED)


def annotate(ports: QuerySet[Port]) -> QuerySet[Port]:
    """`ports` with `api_up` and `api_degraded`, booleans for filtering, counting and output.

    Prefixed names: Port.is_up exists and judges the state alone, without the vanished check.
    """
    return ports.annotate(api_up=F("up"), api_degraded=F("degraded"))
