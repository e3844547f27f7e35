"""Transports by channel kind; the contract is in base.py."""

from __future__ import annotations

from .alertmanager import AlertmanagerTransport
from .apprise import AppriseTransport
from .base import PermanentError, RetryableError, Transport, TransportError
from .email import EmailTransport
from .slack import SlackTransport
from .webhook import WebhookTransport

TRANSPORTS: dict[str, Transport] = {
    t.kind: t
    for t in (WebhookTransport(), AlertmanagerTransport(), EmailTransport(), SlackTransport(), AppriseTransport())
}

__all__ = ["TRANSPORTS", "PermanentError", "RetryableError", "Transport", "TransportError"]
