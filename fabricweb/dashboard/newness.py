"""New problems: those opened in the last few minutes, marked "new" on every list and put first on the wall.

The wall cannot show every problem of a large outage; what it cuts must be what the room has already seen.
So it shows the new problems first (newest first), then the others most severe first and newest first
within a severity: whatever falls off the end of the screen is the oldest of the least severe.
"""

from __future__ import annotations

from datetime import datetime, timedelta

NEW_FOR = timedelta(minutes=5)  # a problem this young is "new": about 30 polls at the default 10 s
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def is_new(event, now: datetime) -> bool:
    return now - event.opened_at <= NEW_FOR


def mark_new(events, now: datetime) -> None:
    """Set `event.is_new` on each of `events` (the templates' "new" mark)."""
    for event in events:
        event.is_new = is_new(event, now)


def wall_order(events, now: datetime) -> list:
    """New problems first, newest first; then the others most severe first, newest first (see the docstring)."""

    def key(event):
        newest_first = -event.opened_at.timestamp()
        if is_new(event, now):
            return (0, 0, newest_first, -event.pk)
        return (1, SEVERITY_RANK.get(event.severity, 3), newest_first, -event.pk)

    return sorted(events, key=key)
