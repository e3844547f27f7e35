"""What the pages accept: filters (GET) and operator actions (POST). A bad value is a message, never a 500."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.core.validators import RegexValidator
from django.utils import timezone

from collectors.link import SPEEDS, WIDTHS
from fabricweb.health.models import Event, Silence
from fabricweb.inventory.models import TEXT_MAX

from .marks import HEALTH_WORDS

# Host and device names are letters, digits, `_ . -`; a glob adds `*` and `?`. Nothing else reaches SQL.
GLOB = RegexValidator(r"^[A-Za-z0-9_.\-*?]+$", "use letters, digits, - _ . and the wildcards * and ?")
KIND_GLOB = RegexValidator(r"^[a-z0-9_*?]+$", "use lower-case letters, digits, _ and the wildcards * and ?")
PORT_GLOB = RegexValidator(r"^[0-9*?]+$", "use digits and the wildcards * and ?")
# A port's health (fabricweb.inventory.portfacts' statuses, and erroring), worst first.
STATES = (("", "any state"), *HEALTH_WORDS.items())
MAX_SILENCE = timedelta(days=90)


def glob_field(label: str, max_length: int = 64, validator=GLOB) -> forms.CharField:
    return forms.CharField(label=label, required=False, max_length=max_length, validators=[validator])


class PortFilter(forms.Form):
    node = glob_field("node")
    device = glob_field("device")
    state = forms.ChoiceField(choices=STATES, required=False)
    speed = forms.ChoiceField(choices=[("", "any speed"), *((s.name, s.name) for s in SPEEDS)], required=False)
    width = forms.TypedChoiceField(
        choices=[("", "any width"), *((str(w), f"{w}X") for w in WIDTHS)], coerce=int, required=False, empty_value=None
    )
    hca = forms.CharField(label="HCA model", required=False, max_length=TEXT_MAX)
    layer = forms.ChoiceField(
        label="link layer",
        choices=(("", "any layer"), ("InfiniBand", "InfiniBand"), ("Ethernet", "Ethernet")),
        required=False,
    )
    problems = forms.BooleanField(label="only problems", required=False)
    sort = forms.ChoiceField(
        label="sort problems",
        choices=(("", "most severe first"), ("newest", "newest first")),
        required=False,
    )
    # The pagers of the problem list and of the advice: set by those lists' page links, not in the filter bar.
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    advice = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    PAGERS = frozenset({"page", "advice"})

    def filters(self) -> list:
        """The fields the filter bar shows: every one but the pagers."""
        return [field for field in self if field.name not in self.PAGERS]


EVENT_STATUS = (
    ("open", "open"),
    ("acknowledged", "open, acknowledged"),
    ("silenced", "open, silenced"),
    ("resolved", "resolved"),
    ("all", "all"),
)


class EventFilter(forms.Form):
    status = forms.ChoiceField(choices=EVENT_STATUS, required=False)
    severity = forms.ChoiceField(choices=[("", "any severity"), *Event.Severity.choices], required=False)
    kind = glob_field("kind", Event._meta.get_field("kind").max_length, KIND_GLOB)
    node = glob_field("node")
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)


class AcknowledgeForm(forms.Form):
    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput(attrs={"placeholder": "note"}))


class SilenceForm(forms.Form):
    node_glob = glob_field("node", 100)
    device_glob = glob_field("device", 100)
    port_glob = glob_field("port", 20, PORT_GLOB)
    kind_glob = glob_field("kind", 64, KIND_GLOB)
    ends_at = forms.DateTimeField(
        label="until (UTC)",
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    reason = forms.CharField(max_length=2000)

    def clean_ends_at(self):
        ends = self.cleaned_data["ends_at"]
        now = timezone.now()
        if ends <= now:
            raise forms.ValidationError("must be in the future")
        if ends - now > MAX_SILENCE:
            raise forms.ValidationError(f"at most {MAX_SILENCE.days} days ahead")
        return ends

    def clean(self):
        data = super().clean()
        for name in ("node_glob", "device_glob", "port_glob", "kind_glob"):
            data[name] = data.get(name) or "*"
        if not self.errors and all(data[n] == "*" for n in ("node_glob", "device_glob", "port_glob", "kind_glob")):
            raise forms.ValidationError(
                "name at least a node, device, port or kind: silencing everything hides outages"
            )
        return data

    def silence(self, user, now) -> Silence:
        d = self.cleaned_data
        return Silence.objects.create(
            node_glob=d["node_glob"],
            device_glob=d["device_glob"],
            port_glob=d["port_glob"],
            kind_glob=d["kind_glob"],
            reason=d["reason"],
            created_by=user,
            created_by_name=user.get_username(),
            created_at=now,
            starts_at=now,
            ends_at=d["ends_at"],
        )


class WallLinkForm(forms.Form):
    name = forms.CharField(max_length=100)


def glob_filter(field: str, glob: str) -> dict:
    """A Django lookup for a shell glob already checked by GLOB/KIND_GLOB: equality without wildcards, else the
    database's own glob matching (globlookup: linear time, never a backtracking regex)."""
    if "*" not in glob and "?" not in glob:
        return {field: glob}
    return {f"{field}__glob": glob}
