"""Channel problems in one call, for /healthz and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from .models import Channel, Delivery


@dataclass(frozen=True, slots=True)
class ChannelProblem:
    channel: str
    kind: str
    state: str  # "failed" (permanent error, or a delivery given up) or "retrying"
    error: str  # never holds a secret: transports name the host and status, not the URL
    since: datetime | None
    pending: int  # deliveries waiting for this channel
    failed: int  # deliveries given up on


def channel_problems() -> list[ChannelProblem]:
    """Enabled channels that are not OK, the worst first. Two queries."""
    channels = list(Channel.objects.filter(enabled=True).exclude(state=Channel.State.OK))
    if not channels:
        return []
    rows = Delivery.objects.filter(channel__in=channels).values("channel_id", "status").annotate(n=Count("id"))
    counts = {(r["channel_id"], r["status"]): r["n"] for r in rows}
    problems = [
        ChannelProblem(
            c.name,
            c.kind,
            c.state,
            c.last_error,
            c.last_error_at,
            counts.get((c.pk, Delivery.Status.PENDING), 0),
            counts.get((c.pk, Delivery.Status.FAILED), 0),
        )
        for c in channels
    ]
    problems.sort(key=lambda p: (p.state != Channel.State.FAILED, p.channel))
    return problems
