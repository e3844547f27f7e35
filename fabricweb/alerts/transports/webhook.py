"""Generic webhook: POST the payload (the documented body, version 1) as JSON."""

from __future__ import annotations

from .base import Transport
from .http import post_json


class WebhookTransport(Transport):
    kind = "webhook"

    def send(self, channel, payload: dict) -> None:
        post_json(self.url(channel), payload, {"X-Fabricweb-Delivery": payload["id"]})
