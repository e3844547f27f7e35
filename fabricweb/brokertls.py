"""TLS to the broker: `rediss://` always verifies the server's certificate. Standard library only,
so the node agent configures its connection by the same rule as the central processes.

kombu, given a `rediss://` URL and no SSL options, connects without checking the
certificate (and warns "insecure SSL"): anyone on the path could read every snapshot
and impersonate the broker. Here the certificate is checked against FABRIC_REDIS_CA_FILE,
or the system's CAs when it is not set; a site that really wants no verification must
say so in the URL (`?ssl_cert_reqs=none`), where a reviewer sees it.
"""

from __future__ import annotations

import ssl
from urllib.parse import parse_qs, urlsplit


def is_tls(url: str) -> bool:
    return urlsplit(url).scheme == "rediss"


def unchecked(url: str) -> bool:
    """Whether the URL itself turns the certificate check off (`?ssl_cert_reqs=none`)."""
    return parse_qs(urlsplit(url).query).get("ssl_cert_reqs") == ["none"]


def celery_ssl_options(url: str, ca_file: str | None) -> dict | None:
    """Celery's broker_use_ssl for `url`: None for plain Redis, certificate checks for rediss://."""
    if not is_tls(url):
        return None
    if unchecked(url):
        return {"ssl_cert_reqs": ssl.CERT_NONE}
    return {"ssl_cert_reqs": ssl.CERT_REQUIRED, "ssl_ca_certs": ca_file, "ssl_check_hostname": True}


def redis_py_options(url: str, ca_file: str | None) -> dict:
    """Keyword arguments for redis.Redis.from_url(url) that check the certificate the same way."""
    if not is_tls(url) or unchecked(url):
        return {}
    return {"ssl_cert_reqs": "required", "ssl_ca_certs": ca_file, "ssl_check_hostname": True}


def ssl_context(url: str, ca_file: str | None) -> ssl.SSLContext | None:
    """A TLS context that checks the certificate the same way (the node agent's own connection); None for plain
    Redis."""
    if not is_tls(url):
        return None
    context = ssl.create_default_context(cafile=ca_file)
    if unchecked(url):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
