"""Email through Django's SMTP backend: plain text only (no HTML, so nothing from a device is markup).

url: smtp://[user@]host[:port] (STARTTLS when options.starttls is true) or smtps://... (TLS from the
start); the password comes from secret_env. options: {"to": [addresses], "from": address}.
"""

from __future__ import annotations

import smtplib
from urllib.parse import unquote, urlsplit

from django.core.mail import EmailMessage, get_connection

from fabricweb.alerts.payload import text
from fabricweb.alerts.secrets import SecretMissing, read_secret

from .base import TIMEOUT_S, PermanentError, RetryableError, Transport


def one_line(s: str, limit: int = 200) -> str:
    """A header value: control characters (header injection) become spaces."""
    return "".join(c if c.isprintable() else " " for c in s)[:limit]


class EmailTransport(Transport):
    kind = "email"

    def send(self, channel, payload: dict) -> None:
        parts = urlsplit(channel.url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise PermanentError("url must be smtp://[user@]host[:port] or smtps://...")
        to = channel.options.get("to") or []
        if not to or not all(isinstance(a, str) for a in to):
            raise PermanentError('options.to must list the recipients, e.g. {"to": ["oncall@example.org"]}')
        password = None
        if parts.username:
            try:
                password = read_secret(channel.secret_env)
            except SecretMissing as e:
                raise PermanentError(f"SMTP password: {e}") from None
        connection = get_connection(
            "django.core.mail.backends.smtp.EmailBackend",
            host=parts.hostname,
            port=parts.port or (465 if parts.scheme == "smtps" else 25),
            username=unquote(parts.username or ""),
            password=password or "",
            use_ssl=parts.scheme == "smtps",
            use_tls=bool(channel.options.get("starttls")),
            timeout=TIMEOUT_S,
            fail_silently=False,
        )
        message = EmailMessage(
            subject=one_line(f"[fabricweb] {payload['title']}"),
            body=text(payload),
            from_email=channel.options.get("from") or "fabricweb@localhost",
            to=to,
            headers={"X-Fabricweb-Delivery": payload["id"]},
            connection=connection,
        )
        try:
            message.send()
        except smtplib.SMTPResponseException as e:
            what = f"SMTP server answered {e.smtp_code}"
            raise (PermanentError if e.smtp_code >= 500 else RetryableError)(what) from None
        except smtplib.SMTPRecipientsRefused as e:
            raise PermanentError(f"SMTP server refused every recipient ({len(e.recipients)})") from None
        except (TimeoutError, smtplib.SMTPException, OSError) as e:
            raise RetryableError(f"SMTP server {parts.hostname} did not take it: {type(e).__name__}: {e}") from None
