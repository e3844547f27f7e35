"""Stored state of link health: events (what the rules found, open or resolved) and operator link policies.

The rules themselves are pure (fabricweb.health.rules); these tables hold their state
between polls and the operator's expectations.
"""

from __future__ import annotations

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

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "link policies"

    def __str__(self) -> str:
        return self.name
