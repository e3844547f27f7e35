"""Query parameters: each one parsed strictly, a bad or unknown one is a 400 that names it.

Being strict catches typos: `?stat=down` silently listing every port would be worse
than an error.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest
from django.utils.dateparse import parse_datetime

from .http import bad_param

Parser = Callable[[str, str], Any]


def read(request: HttpRequest, parsers: dict[str, Parser]) -> dict[str, Any]:
    """{name: parsed value} for the parameters given; names not in `parsers` are refused."""
    out = {}
    for name in request.GET:
        if name not in parsers:
            known = ", ".join(sorted(parsers)) or "none"
            raise bad_param(name, f"unknown parameter (this endpoint takes: {known})")
        values = request.GET.getlist(name)
        if len(values) > 1:
            raise bad_param(name, "given more than once")
        out[name] = parsers[name](name, values[0])
    return out


def boolean(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise bad_param(name, f"expected true or false, got {_show(raw)}")


def choice(*allowed: str) -> Parser:
    def parse(name: str, raw: str) -> str:
        if raw not in allowed:
            raise bad_param(name, f"expected one of {', '.join(allowed)}, got {_show(raw)}")
        return raw

    return parse


def integer(low: int, high: int) -> Parser:
    def parse(name: str, raw: str) -> int:
        text = raw.strip()
        # isdecimal() would take other scripts' digits; a count in a URL is ASCII.
        if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
            raise bad_param(name, f"expected an integer from {low} to {high}, got {_show(raw)}")
        return int(text)

    return parse


def text(max_length: int) -> Parser:
    def parse(name: str, raw: str) -> str:
        if not raw or len(raw) > max_length:
            raise bad_param(name, f"expected 1 to {max_length} characters")
        # NUL and other control characters name nothing here (and PostgreSQL refuses NUL outright).
        if not raw.isprintable():
            raise bad_param(name, "must not contain control characters")
        return raw

    return parse


# Times the API can compute with: windows are subtracted and added without leaving datetime's range.
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def in_range(value: datetime) -> bool:
    return EARLIEST <= value < LATEST


def timestamp(name: str, raw: str) -> datetime:
    """ISO 8601 between 1970 and 2200; a time without an offset is taken as UTC (the API speaks UTC)."""
    try:
        value = parse_datetime(raw.strip())
        if value is not None:
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        value = None
    if value is None:
        raise bad_param(name, f"expected an ISO 8601 time such as 2026-03-01T12:00:00Z, got {_show(raw)}")
    if not in_range(value):
        raise bad_param(name, f"expected a time from {EARLIEST:%Y} to {LATEST:%Y}, got {_show(raw)}")
    return value


def _show(raw: str) -> str:
    # Echo enough to recognise the value, never a wall of it.
    return repr(raw if len(raw) <= 40 else raw[:40] + "...")
