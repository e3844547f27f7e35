"""Apprise: one URL reaches many chat and paging services (Teams, Telegram, Opsgenie, ntfy, ...).

The URL (which usually holds a token) comes from secret_env, or url. Apprise says only
whether it worked: an URL it cannot parse is permanent, a failed notify is retried.
"""

from __future__ import annotations

import apprise

from fabricweb.alerts.payload import text

from .base import PermanentError, RetryableError, Transport


class AppriseTransport(Transport):
    kind = "apprise"

    def send(self, channel, payload: dict) -> None:
        notifier = apprise.Apprise()
        if not notifier.add(self.url(channel)):
            raise PermanentError("Apprise does not understand the channel's URL")
        if not notifier.notify(body=text(payload), title=payload["title"], body_format=apprise.NotifyFormat.TEXT):
            raise RetryableError("Apprise could not deliver the notification (see the worker log)")
