"""Notification state: channels (where to send), the outbox (event changes, written by ingest),
threads (what each channel has been told about each event key) and deliveries (one message
to one channel, retried until the receiver answers).

How they connect: ingest writes Outbox rows in its own transaction (outbox.py); routing
(routing.py) turns them into Thread changes and Delivery rows in one transaction; delivery
(delivery.py) sends each channel's deliveries in order. See docs/alerts.md.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models

from fabricweb.health.models import Event

from .secrets import secret_env_problem

SEVERITIES = ("critical", "warning", "info")


def url_problem(kind: str, url: str, secret_env: str) -> str | None:
    """Why this address may not be stored (it would hold a secret, or there is none), or None."""
    if not url and not secret_env:
        return "give url, or secret_env naming the variable that holds it"
    if not url:
        return None
    if kind in ("slack", "apprise"):  # their URLs carry the token in the path
        return f"a {kind} URL holds its token: leave url blank and name the variable in secret_env"
    parts = urlsplit(url)
    if parts.password or parts.query:
        return "url must not hold a password or a query string (tokens): name them in secret_env"
    return None


class Channel(models.Model):
    """A receiver of notifications and its routing: which severities, how long to wait, how to group and repeat."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", "generic webhook (JSON)"
        ALERTMANAGER = "alertmanager", "Prometheus Alertmanager (v2 API)"
        EMAIL = "email", "email (SMTP)"
        SLACK = "slack", "Slack-compatible incoming webhook"
        APPRISE = "apprise", "Apprise URL (many chat and paging services)"

    class State(models.TextChoices):
        OK = "ok"
        RETRYING = "retrying", "retrying (receiver not answering)"
        FAILED = "failed", "failed (permanent error)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    enabled = models.BooleanField(default=True)
    url = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="Receiver address (webhook URL, Alertmanager base URL, smtp://host:port, Apprise URL). "
        "Leave blank when it holds a token: give secret_env instead.",
    )
    secret_env = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Name of an environment variable (or NAME_FILE: a file) holding the secret: the URL when "
        "url is blank, else the SMTP password. Never stored here.",
    )
    options = models.JSONField(
        default=dict, blank=True, help_text='Per kind, e.g. email: {"to": ["oncall@example.org"], "from": "..."}.'
    )
    severities = models.JSONField(default=list, help_text='Severities this channel gets, e.g. ["critical"].')
    wait_s = models.FloatField(
        default=0, help_text="`for`: an event must stay open this long before it is sent (0: at once)."
    )
    group_s = models.FloatField(
        default=1, help_text="Events due within this window after the first are sent as one notification."
    )
    flap_hold_s = models.FloatField(
        default=60,
        help_text="A resolved event is announced only after this long; reopening within it continues the thread.",
    )
    repeat_s = models.FloatField(default=0, help_text="Repeat unacknowledged critical events this often (0: never).")
    max_age_s = models.FloatField(
        default=86400, help_text="A delivery not accepted by the receiver within this long is marked failed."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.OK)
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    def clean(self) -> None:
        problem = secret_env_problem(self.secret_env)
        if problem:
            raise ValidationError({"secret_env": problem})
        problem = url_problem(self.kind, self.url, self.secret_env)
        if problem:
            raise ValidationError({"url": problem})
        if not isinstance(self.severities, list) or not self.severities or set(self.severities) - set(SEVERITIES):
            raise ValidationError({"severities": f"a non-empty list of {', '.join(SEVERITIES)}"})


class Outbox(models.Model):
    """An event change to route, written in the transaction that changed the event."""

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="+")
    change = models.CharField(max_length=16)  # opened, severity, resolved (fabricweb.health.signals)
    at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "outbox"


class Thread(models.Model):
    """What one channel has been told about one event key: pending (waiting for `for` or a silence),
    firing (announced), resolving (resolved, held for flap damping). Deleted once the resolution is sent
    (or when the event resolved before anything was sent)."""

    class State(models.TextChoices):
        PENDING = "pending"
        FIRING = "firing"
        RESOLVING = "resolving"

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="threads")
    key = models.CharField(max_length=255)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices)
    due_at = models.DateTimeField(help_text="Pending: when it may be sent; resolving: when the resolution is sent.")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="Last firing or repeat notification.")
    sent_severity = models.CharField(max_length=16, blank=True, default="", help_text="Severity last announced.")
    bounces = models.IntegerField(default=0, help_text="Times it resolved and reopened within the flap hold.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "key"], name="alerts_thread_one_per_key")]
        indexes = [models.Index(fields=["channel", "state", "due_at"], name="alerts_thread_due")]


class Delivery(models.Model):
    """One notification to one channel. Its `uid` goes to the receiver (body and header) so a
    receiver can drop a copy; `status` moves pending -> sent, or failed (permanent error or too old)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    class Reason(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"
        REPEAT = "repeat"
        TEST = "test"

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    keys = models.TextField(help_text="The event keys it announces, one a line.")
    payload = models.JSONField(help_text="The notification as rendered when it was routed (webhook body v1).")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()
    attempts = models.IntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "deliveries"
        indexes = [models.Index(fields=["channel", "status", "id"], name="alerts_delivery_queue")]

    def __str__(self) -> str:
        return f"{self.reason} to {self.channel_id}: {self.status}"
