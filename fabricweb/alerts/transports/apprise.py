"""Apprise: one URL reaches many chat and paging services (Teams, Telegram, Opsgenie, ntfy, ...).

The URL (which usually holds a token) comes from secret_env, or url. Apprise says only
whether it worked: an URL it cannot parse is permanent, a failed notify is retried.
"""

from __future__ import annotations

from fabricweb.alerts.payload import text

from .base import PermanentError, RetryableError, Transport


class AppriseTransport(Transport):
    kind = "apprise"

    def send(self, channel, payload: dict) -> None:
        # Imported here, not at the top: Apprise loads its ~100 service plugins on import, and every process
        # that starts Django imports the transports (the admin's test delivery), while only the alerts worker
        # sends, and only where an Apprise channel is configured.
        import apprise

        notifier = apprise.Apprise()
        if not notifier.add(self.url(channel)):
            raise PermanentError("Apprise does not understand the channel's URL")
        if not notifier.notify(body=text(payload), title=payload["title"], body_format=apprise.NotifyFormat.TEXT):
            raise RetryableError("Apprise could not deliver the notification (see the worker log)")
