"""POST JSON with the standard library, classified into the transport contract's two errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from .base import TIMEOUT_S, PermanentError, RetryableError

RETRYABLE_STATUS = {408, 425, 429}


def post_json(url: str, body: object, headers: dict[str, str] | None = None) -> bytes:
    """POST `body` as JSON; the response body on 2xx. Error messages name the host, never the path (tokens)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PermanentError(f"not an http(s) URL (scheme {parts.scheme!r})")
    where = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    data = json.dumps(body, ensure_ascii=False).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        detail = e.read(300).decode("utf-8", "replace").strip()
        message = f"{where} answered HTTP {e.code}" + (f": {detail}" if detail else "")
        if e.code >= 500 or e.code in RETRYABLE_STATUS:
            raise RetryableError(message) from None
        raise PermanentError(message) from None
    except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise RetryableError(f"{where} did not answer: {reason}") from None
