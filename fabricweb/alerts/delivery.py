"""Send each channel's pending deliveries, oldest first, until the receiver stops answering.

Order: a channel's deliveries go out in the order they were routed, and one that the
receiver has not taken blocks the later ones (so "resolved" never overtakes "firing").
A retryable failure waits 1, 2, 4 ... MAX_BACKOFF_S seconds; past the channel's
max_age_s the delivery is failed with its last error and the next one goes. A
permanent failure fails the delivery at once and marks the channel failed (admin,
/healthz) until a later delivery succeeds.

Exactly once, as far as it can be: the attempt is counted (committed) before the send
and the result committed right after the receiver answers, so a retry never resends a
delivery whose answer was recorded. A process killed between the receiver's answer and
that commit (a few milliseconds) sends it again; the body's `id` lets a receiver drop it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .models import Channel, Delivery
from .transports import TRANSPORTS, PermanentError, RetryableError

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 300.0


@dataclass(slots=True)
class DeliverReport:
    sent: int = 0
    failed: int = 0
    waiting: int = 0  # channels whose head delivery waits for a retry
    next_due: datetime | None = None


def backoff(attempts: int) -> float:
    return min(MAX_BACKOFF_S, 2.0 ** max(0, attempts - 1))


def deliver_all(keep_going: Callable[[], bool] = lambda: True) -> DeliverReport:
    """One round over every channel with pending deliveries; `keep_going` is asked between sends."""
    report = DeliverReport()
    channel_ids = Delivery.objects.filter(status=Delivery.Status.PENDING).values_list("channel_id", flat=True)
    for channel in Channel.objects.filter(pk__in=set(channel_ids)):
        deliver_channel(channel, report, keep_going)
    return report


def deliver_channel(channel: Channel, report: DeliverReport, keep_going: Callable[[], bool]) -> None:
    transport = TRANSPORTS.get(channel.kind)
    while keep_going():
        now = timezone.now()
        delivery = channel.deliveries.filter(status=Delivery.Status.PENDING).order_by("id").first()
        if delivery is None:
            return
        if delivery.next_attempt_at > now:
            report.waiting += 1
            _due(report, delivery.next_attempt_at)
            return
        if not channel.enabled and delivery.reason != Delivery.Reason.TEST:
            _finish(delivery, Delivery.Status.FAILED, "the channel is disabled")
            report.failed += 1
            continue
        if delivery.attempts and now - delivery.created_at > timedelta(seconds=channel.max_age_s):
            why = f"not accepted within {channel.max_age_s:g} s ({delivery.attempts} attempts): {delivery.last_error}"
            _finish(delivery, Delivery.Status.FAILED, why)
            _channel_state(channel, Channel.State.FAILED, why, now)
            report.failed += 1
            log.error("alerts: %s: delivery %s given up: %s", channel.name, delivery.uid, why)
            continue
        delivery.attempts += 1
        Delivery.objects.filter(pk=delivery.pk).update(attempts=delivery.attempts)  # counted before the send
        started = time.monotonic()
        try:
            if transport is None:
                raise PermanentError(f"no transport for kind {channel.kind!r}")
            transport.send(channel, delivery.payload)
        except RetryableError as e:
            retry_at = timezone.now() + timedelta(seconds=backoff(delivery.attempts))
            Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=retry_at, last_error=str(e))
            _channel_state(channel, Channel.State.RETRYING, str(e), timezone.now())
            log.warning(
                "alerts: %s: %s; retry %d in %.0f s", channel.name, e, delivery.attempts, backoff(delivery.attempts)
            )
            report.waiting += 1
            _due(report, retry_at)
            return
        except PermanentError as e:
            _finish(delivery, Delivery.Status.FAILED, str(e))
            _channel_state(channel, Channel.State.FAILED, str(e), timezone.now())
            report.failed += 1
            log.error("alerts: %s: permanent failure, delivery %s dropped: %s", channel.name, delivery.uid, e)
            continue
        except Exception as e:  # a bug in a transport: retried like an outage, and logged in full
            log.exception("alerts: %s: transport failed", channel.name)
            retry_at = timezone.now() + timedelta(seconds=backoff(delivery.attempts))
            Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=retry_at, last_error=repr(e)[:500])
            _due(report, retry_at)
            return
        _finish(delivery, Delivery.Status.SENT, "")
        report.sent += 1
        log.info(
            "alerts: %s: %s sent (%s, %.0f ms)",
            channel.name,
            delivery.reason,
            delivery.uid,
            (time.monotonic() - started) * 1e3,
        )
        # A success clears the channel's failure: the receiver answers again, or its configuration was fixed.
        channel.state, channel.last_success_at = Channel.State.OK, timezone.now()
        Channel.objects.filter(pk=channel.pk).update(state=channel.state, last_success_at=channel.last_success_at)


def _finish(delivery: Delivery, status: str, error: str) -> None:
    fields = {"status": status, "last_error": error}
    if status == Delivery.Status.SENT:
        fields["sent_at"] = timezone.now()
    Delivery.objects.filter(pk=delivery.pk).update(**fields)


def _channel_state(channel: Channel, state: str, error: str, at: datetime) -> None:
    channel.state, channel.last_error, channel.last_error_at = state, error, at
    Channel.objects.filter(pk=channel.pk).update(state=state, last_error=error, last_error_at=at)


def _due(report: DeliverReport, at: datetime) -> None:
    if report.next_due is None or at < report.next_due:
        report.next_due = at
