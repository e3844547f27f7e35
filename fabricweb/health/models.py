"""Stored state of link health: events (what the rules found, open or resolved), operator link
policies, and what operators said about events: acknowledgements and silences.

The rules themselves are pure (fabricweb.health.rules); these tables hold their state
between polls and the operator's expectations. The dashboard writes acknowledgements
and silences; notifications (fabricweb.alerts) honour them: an acknowledged event is
not repeated, a silenced one is not delivered, and both stay recorded and visible.
"""

from __future__ import annotations

from datetime import datetime
from fnmatch import fnmatchcase

from django.conf import settings
from django.db import models

from collectors.link import SPEEDS, WIDTHS
from fabricweb.inventory.models import Device, Node, Port


class Event(models.Model):
    """One problem on a node, device or port, from the poll it appeared until it has been clear a while."""

    class Severity(models.TextChoices):
        CRITICAL = "critical"
        WARNING = "warning"
        INFO = "info"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="events")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, null=True, blank=True, related_name="events")
    port = models.ForeignKey(Port, on_delete=models.CASCADE, null=True, blank=True, related_name="events")
    kind = models.CharField(max_length=64)
    severity = models.CharField(max_length=16, choices=Severity.choices)
    key = models.CharField(max_length=255, help_text="Names the thing and the kind of problem: one open event per key.")
    message = models.TextField(help_text="The finding in an operator's words.")
    reason = models.TextField(blank=True, default="", help_text="Why: the evidence, or how long it has been clear.")
    opened_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    clean_polls = models.IntegerField(default=0, help_text="Consecutive polls without the finding (hysteresis).")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["key"], condition=models.Q(resolved_at__isnull=True), name="health_event_one_open_per_key"
            )
        ]
        indexes = [
            models.Index(fields=["resolved_at", "severity"], name="health_event_open_severity"),
            models.Index(fields=["node", "opened_at"], name="health_event_node_opened"),
        ]
        # The operator role (dashboard): acknowledge, silence, accept a baseline, edit link policies.
        permissions = [("operate", "Can acknowledge and silence events and accept link baselines")]

    def __str__(self) -> str:
        return f"{self.severity} {self.key}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


class LinkPolicy(models.Model):
    """An operator's word on the link a set of ports should run at, e.g. "all mlx5 ports on cn* are 4X HDR"."""

    name = models.CharField(max_length=100, unique=True)
    node_glob = models.CharField(max_length=100, default="*", help_text="Shell pattern on the node name, e.g. cn*.")
    device_glob = models.CharField(max_length=100, default="*", help_text="Shell pattern on the device, e.g. mlx5_*.")
    port_glob = models.CharField(max_length=20, default="*", help_text="Shell pattern on the port number.")
    speed = models.CharField(
        max_length=8, null=True, blank=True, choices=[(s.name, s.name) for s in SPEEDS], help_text="Blank: learn it."
    )
    lanes = models.SmallIntegerField(
        null=True, blank=True, choices=[(w, f"{w}X") for w in WIDTHS], help_text="Blank: learn it."
    )
    expect_up = models.BooleanField(default=True, help_text="Off for ports that are meant to be down or unused.")
    order = models.IntegerField(default=100, help_text="Lower is tried first when several policies match.")
    enabled = models.BooleanField(default=True)
    pcie_shared = models.CharField(
        max_length=8,
        null=True,
        blank=True,
        choices=[("warning", "warning"), ("info", "info")],
        help_text="How a PCIe switch uplink its ports' cards share with GPUs is reported. Blank: info, unless "
        "another policy says.",
    )
    # A baseline (the operator action "accept the current link"): who and when, and the port's best and
    # expected link before it, which undoing it puts back.
    accepted_by = models.CharField(max_length=150, blank=True, default="")
    accepted_at = models.DateTimeField(null=True, blank=True)
    replaced = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "link policies"

    def __str__(self) -> str:
        return self.name


class DrainPolicy(models.Model):
    """Which findings on a node's own link take the node out of the scheduler (fabricweb.jobs.drain).

    The first enabled policy by order whose pattern matches the node decides; with none, the default
    (DEFAULT_DRAIN_KINDS at critical) does. `drain` off exempts the nodes it matches. A fault between two
    switches never drains a node, whatever a policy says: no node is to blame for it.
    """

    name = models.CharField(max_length=100, unique=True)
    node_glob = models.CharField(max_length=100, default="*", help_text="Shell pattern on the node name, e.g. cn*.")
    kinds = models.JSONField(default=list, help_text="Finding kinds that drain, e.g. down, degraded, flapping.")
    severity = models.CharField(
        max_length=8,
        default="critical",
        choices=[("critical", "critical"), ("warning", "warning")],
        help_text="The least severity of those findings that drains.",
    )
    drain = models.BooleanField(default=True, help_text="Off: never drain the nodes this policy matches.")
    order = models.IntegerField(default=100, help_text="Lower is tried first when several policies match.")
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "drain policies"

    def __str__(self) -> str:
        return self.name

    def matches(self, node: str) -> bool:
        return fnmatchcase(node, self.node_glob)


class Acknowledgement(models.Model):
    """An operator has seen an open event and is on it: repeats of its notification stop.

    One per event; acknowledging again replaces the note. The event itself is unchanged:
    it still resolves only when the rules find it clear.
    """

    event = models.OneToOneField(Event, on_delete=models.CASCADE, related_name="acknowledgement")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    by_name = models.CharField(max_length=150, help_text="Who, kept when the user is deleted.")
    note = models.TextField(blank=True, default="", max_length=2000)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.event.key} acknowledged by {self.by_name}"


class SilenceQuerySet(models.QuerySet):
    def active(self, now: datetime) -> SilenceQuerySet:
        """Silences in force at `now`: started, not ended, not lifted."""
        return self.filter(starts_at__lte=now, ends_at__gt=now, lifted_at__isnull=True)


class Silence(models.Model):
    """No notification for matching events until `ends_at`. Matching events are still opened,
    recorded and shown (marked silenced); only delivery stops. Globs are shell patterns
    (fnmatch, case-sensitive) on the node name, device name, port number and event kind;
    `*` matches anything, including events about a whole node or device."""

    node_glob = models.CharField(max_length=100, default="*", help_text="e.g. cn0* or cn042")
    device_glob = models.CharField(max_length=100, default="*", help_text="e.g. mlx5_*")
    port_glob = models.CharField(max_length=20, default="*", help_text="e.g. 1 or *")
    kind_glob = models.CharField(max_length=64, default="*", help_text="e.g. symbol_errors, or * for every kind")
    reason = models.TextField(max_length=2000, help_text="Why, for whoever wonders where the pages went.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField()
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    lifted_at = models.DateTimeField(null=True, blank=True, help_text="Set when an operator ends it early.")
    lifted_by_name = models.CharField(max_length=150, blank=True, default="")

    objects = SilenceQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["ends_at"], name="health_silence_ends")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")), name="health_silence_ends_later"
            )
        ]

    def __str__(self) -> str:
        where = f"{self.node_glob} {self.device_glob}/{self.port_glob} {self.kind_glob}"
        return f"{where} until {self.ends_at:%Y-%m-%d %H:%M}Z"

    def matches(self, node: str, device: str | None, port: int | None, kind: str) -> bool:
        return silence_matches(
            (self.node_glob, self.device_glob, self.port_glob, self.kind_glob), node, device, port, kind
        )


def silence_matches(
    globs: tuple[str, str, str, str], node: str, device: str | None, port: int | None, kind: str
) -> bool:
    """Whether (node, device, port, kind) falls under these four globs. An event about a whole node
    or device (device or port None) is matched only by `*` in the parts it lacks."""
    node_glob, device_glob, port_glob, kind_glob = globs
    parts = (
        (node_glob, node),
        (device_glob, device),
        (port_glob, None if port is None else str(port)),
        (kind_glob, kind),
    )
    for glob, value in parts:
        if value is None:
            if glob != "*":
                return False
        elif not fnmatchcase(value, glob):
            return False
    return True


def silencing(event: Event, silences) -> Silence | None:
    """The first of `silences` (already filtered to those in force) that covers `event`; needs
    `event.node`, `event.device` and `event.port` loaded."""
    device = event.device.name if event.device_id is not None else None
    port = event.port.number if event.port_id is not None else None
    for silence in silences:
        if silence.matches(event.node.name, device, port, event.kind):
            return silence
    return None
