"""The events page's query: EventFilter's state, severity, kind and node, a time range (a preset, the last
1 h, 24 h or 7 d, or from/to in UTC) and the CSV export. An event is in a range when it was open at any
time within it: opened before its end, not resolved before its start."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms

from .forms import EventFilter

PRESETS = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
WHEN_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"]


def _when(label: str) -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=False,
        input_formats=WHEN_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )


class EventsQuery(EventFilter):
    last = forms.ChoiceField(
        label="open during",
        required=False,
        choices=[("", "any time"), ("1h", "the last 1 h"), ("24h", "the last 24 h"), ("7d", "the last 7 d")],
    )
    since = _when("from (UTC)")
    until = _when("to (UTC)")
    format = forms.ChoiceField(required=False, choices=[("", "page"), ("csv", "CSV")])

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if data.get("last") and (since or until):
            raise forms.ValidationError("choose either a preset (the last 1 h, 24 h, 7 d) or from/to, not both")
        if since and until and since >= until:
            raise forms.ValidationError("from must be before to")
        return data

    def window(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """(start, end) of the range asked for; None where it is open-ended."""
        data = self.cleaned_data
        if data.get("last"):
            return now - PRESETS[data["last"]], None
        return data.get("since"), data.get("until")
