"""Optional credentials for /metrics: a bearer token or basic auth, as Prometheus' scrape config sends them.

Without either setting the endpoint is open, as node_exporter's is: the series say what
the fabric looks like, not how to change it.
"""

from __future__ import annotations

import base64
import binascii
import hmac

from django.conf import settings
from django.http import HttpRequest


def configured() -> bool:
    return bool(settings.FABRIC_METRICS_BEARER_TOKEN or settings.FABRIC_METRICS_BASIC_AUTH)


def allowed(request: HttpRequest) -> bool:
    if not configured():
        return True
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    scheme = scheme.lower()
    token = settings.FABRIC_METRICS_BEARER_TOKEN
    if token and scheme == "bearer":
        return hmac.compare_digest(credentials.strip().encode(), token.encode())
    basic = settings.FABRIC_METRICS_BASIC_AUTH
    if basic and scheme == "basic":
        try:
            given = base64.b64decode(credentials.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(given, basic.encode())
    return False


def challenge() -> str:
    return "Bearer" if settings.FABRIC_METRICS_BEARER_TOKEN else 'Basic realm="fabricweb metrics"'
