"""Pages: limit/offset for lists in name order, a keyset cursor for lists in time order.

Time-ordered lists (events, samples) grow while a client pages through them; a cursor
that says "after this (time, id)" neither repeats nor skips rows when new ones arrive,
where an offset would.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from . import params
from .http import bad_param

MAX_OFFSET = 10**9


def link(request: HttpRequest, **changes: object) -> str:
    """This request's path and query with `changes` applied: a relative `next` link."""
    query = request.GET.copy()
    for name, value in changes.items():
        query[name] = str(value)
    return f"{request.path}?{query.urlencode()}"


def offset_parsers(maximum: int) -> dict[str, params.Parser]:
    return {"limit": params.integer(1, maximum), "offset": params.integer(0, MAX_OFFSET)}


def offset_page(request: HttpRequest, queryset: QuerySet, given: dict, default: int) -> tuple[list, str | None]:
    limit, offset = given.get("limit", default), given.get("offset", 0)
    rows = list(queryset[offset : offset + limit + 1])  # one more than asked: is there a next page?
    if len(rows) <= limit:
        return rows, None
    return rows[:limit], link(request, limit=limit, offset=offset + limit)


def encode_cursor(when: datetime, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{when.isoformat()}|{pk}".encode()).decode().rstrip("=")


def cursor(name: str, raw: str) -> tuple[datetime, int]:
    """A cursor this API gave out in a `next` link: (time, id) of the last row served."""
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("ascii")
        when_text, _, pk_text = text.partition("|")
        when, pk = datetime.fromisoformat(when_text), int(pk_text)
        when = when.astimezone(UTC) if when.tzinfo is not None else when
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise bad_param(name, "not a cursor this API gave out (take it from a `next` link)") from None
    if when.tzinfo is None or pk < 0 or pk > 2**63 - 1 or not params.in_range(when):
        raise bad_param(name, "not a cursor this API gave out (take it from a `next` link)")
    return when, pk


def keyset_page(
    request: HttpRequest,
    queryset: QuerySet,
    field: str,
    *,
    newest_first: bool,
    after: tuple[datetime, int] | None,
    limit: int,
    **pinned: object,
) -> tuple[list, str | None]:
    """Rows ordered by (`field`, id), starting after the cursor `after`.

    `pinned` goes into the `next` link as well, e.g. a window's end that defaulted to
    "now", so that every page reads the same window.
    """
    if after is not None:
        when, pk = after
        op = "lt" if newest_first else "gt"
        queryset = queryset.filter(Q(**{f"{field}__{op}": when}) | Q(**{field: when, f"id__{op}": pk}))
    order = (f"-{field}", "-id") if newest_first else (field, "id")
    return keyset_cut(request, list(queryset.order_by(*order)[: limit + 1]), field, limit, **pinned)


def keyset_cut(request: HttpRequest, rows: list, field: str, limit: int, **pinned: object) -> tuple[list, str | None]:
    """The first `limit` of `rows` (up to limit + 1 read in cursor order) and the link to the next page, if any."""
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], link(request, **pinned, limit=limit, cursor=encode_cursor(getattr(last, field), last.pk))
