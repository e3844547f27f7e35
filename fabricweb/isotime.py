"""Times as the JSON the API and the pages' chart data carry them: ISO 8601 in UTC with `Z`."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).isoformat().replace("+00:00", "Z")
