"""Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat): {"text": ...} in mrkdwn.

Untrusted strings: Slack's three control characters are escaped (&, <, >), so a node_desc
of `<script>` or `<!channel>` arrives as those characters, not as markup or a mention.
"""

from __future__ import annotations

from fabricweb.alerts.payload import text

from .base import Transport
from .http import post_json


def escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackTransport(Transport):
    kind = "slack"

    def send(self, channel, payload: dict) -> None:
        post_json(self.url(channel), {"text": escape(text(payload))})
