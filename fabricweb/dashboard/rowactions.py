"""What a problem or event row offers an operator: "Silence this" for 1 h, 4 h, 1 d or until a time they pick,
and what the row says of its event: why (the reason column) and whether it is acknowledged or silenced.

A row's silence is an ordinary Silence (fabricweb.health.models) naming exactly this event's node, device,
port and kind, so it shows in the events page's "Silences in force", is lifted there, and also covers the
same problem when it comes back within the silence.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.utils import timezone

from fabricweb.health.models import Event, Silence
from fabricweb.health.records import context
from fabricweb.health.rules.expectation import literal_glob

from .forms import MAX_SILENCE

DURATIONS = {"1h": timedelta(hours=1), "4h": timedelta(hours=4), "1d": timedelta(days=1)}
CUSTOM = "custom"


class RowSilenceForm(forms.Form):
    duration = forms.ChoiceField(
        choices=[("1h", "1 h"), ("4h", "4 h"), ("1d", "1 d"), (CUSTOM, "until a time")],
        error_messages={"invalid_choice": "choose 1 h, 4 h, 1 d or a time"},
    )
    until = forms.DateTimeField(
        label="until (UTC)",
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"],
    )
    reason = forms.CharField(required=False, max_length=2000)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        now = timezone.now()
        if data["duration"] != CUSTOM:
            data["ends_at"] = now + DURATIONS[data["duration"]]
            return data
        until = data.get("until")
        if until is None:
            self.add_error("until", "pick the time the silence ends")
        elif until <= now:
            self.add_error("until", "must be in the future")
        elif until - now > MAX_SILENCE:
            self.add_error("until", f"at most {MAX_SILENCE.days} days ahead")
        else:
            data["ends_at"] = until
        return data

    def silence(self, event: Event, user, now: datetime) -> Silence:
        """A silence of exactly this event's node, device, port and kind until the chosen end."""
        d = self.cleaned_data
        return Silence.objects.create(
            node_glob=literal_glob(event.node.name),
            device_glob=literal_glob(event.device.name) if event.device_id else "*",
            port_glob=str(event.port.number) if event.port_id else "*",
            kind_glob=literal_glob(event.kind),
            reason=d["reason"] or f"silenced from its row: {event.message}"[:2000],
            created_by=user,
            created_by_name=user.get_username(),
            created_at=now,
            starts_at=now,
            ends_at=d["ends_at"],
        )


def why(event: Event) -> str:
    """The reason column: what last changed the event, in words (its message is in the next column)."""
    if event.resolved_at is not None:
        return f"resolved: {event.reason}" if event.reason else "resolved"
    if event.clean_polls:
        n, after = event.clean_polls, context.resolve_after()
        return f"not found for {n} poll{'s' if n != 1 else ''}: resolves after {after} clean polls"
    if event.reason.startswith("was ") and ": " in event.reason:
        return event.reason.split(": ", 1)[0]  # "was warning, now critical"
    return "found at its last poll"
