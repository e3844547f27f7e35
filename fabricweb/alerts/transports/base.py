"""The one contract every transport keeps.

A transport gets the channel (its url, options and secret_env) and the payload of one
delivery (fabricweb.alerts.payload: the webhook body, version 1) and either returns, meaning
the receiver accepted the notification, or raises:

- RetryableError: the receiver may take it later (connection refused or reset, timeout,
  HTTP 5xx, 408, 429, SMTP 4xx). The delivery is retried with exponential backoff until it
  is accepted or older than the channel's max_age_s, then it fails.
- PermanentError: as configured it never will (HTTP 4xx, SMTP 5xx, a bad URL, a missing
  secret). The delivery fails at once and the channel is marked failed with the message,
  which the admin and /healthz show.

Messages must never contain a secret (a URL with a token, a password): say what failed
and the status, not the address. A transport must be safe to call again with the same
payload (it is, if its receiver deduplicates by payload["id"], sent as the body's `id`
and where the protocol allows as a header).
"""

from __future__ import annotations

from fabricweb.alerts.models import Channel
from fabricweb.alerts.secrets import SecretMissing, read_secret

TIMEOUT_S = 10.0


class TransportError(Exception):
    pass


class RetryableError(TransportError):
    pass


class PermanentError(TransportError):
    pass


class Transport:
    kind = ""

    def send(self, channel: Channel, payload: dict) -> None:
        raise NotImplementedError

    @staticmethod
    def url(channel: Channel) -> str:
        """The receiver's address: the channel's url, or its secret when url is blank (a URL with a token)."""
        if channel.url:
            return channel.url
        try:
            return read_secret(channel.secret_env)
        except SecretMissing as e:
            raise PermanentError(f"no receiver address: {e}") from None
