"""Covers fabricweb/brokertls.py.

rediss:// checks the broker's certificate, against a real redis-server speaking TLS with a throwaway CA."""

from __future__ import annotations

import ssl

import pytest
import redis
from kombu import Connection

from fabricweb.brokertls import celery_ssl_options, redis_py_options


def test_plain_redis_needs_no_tls_options():
    assert celery_ssl_options("redis://127.0.0.1:6379/0", None) is None
    assert redis_py_options("redis://127.0.0.1:6379/0", "/etc/ca.crt") == {}


def test_rediss_always_asks_for_a_verified_certificate():
    options = celery_ssl_options("rediss://broker:6379/0", None)
    assert options["ssl_cert_reqs"] is ssl.CERT_REQUIRED and options["ssl_check_hostname"] is True
    assert celery_ssl_options("rediss://broker:6379/0?ssl_cert_reqs=none", None) == {"ssl_cert_reqs": ssl.CERT_NONE}


def test_the_broker_is_reached_with_the_sites_ca_and_messages_go_through(tls_redis):
    url, ca = tls_redis
    with Connection(url, ssl=celery_ssl_options(url, ca), connect_timeout=5) as conn:
        queue = conn.SimpleQueue("tls-check")
        queue.put({"hello": "node"})
        assert queue.get(timeout=5).payload == {"hello": "node"}
        queue.close()
    assert redis.Redis.from_url(url, **redis_py_options(url, ca)).ping()


def test_a_broker_whose_certificate_no_trusted_ca_signed_is_refused(tls_redis):
    url, _ = tls_redis
    # The system's CAs (no FABRIC_REDIS_CA_FILE) never signed this certificate: an impostor, as far as we know.
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        redis.Redis.from_url(url, socket_timeout=2, **redis_py_options(url, None)).ping()
    with (
        pytest.raises(Exception, match="certificate verify failed"),
        Connection(url, ssl=celery_ssl_options(url, None), connect_timeout=2) as conn,
    ):
        conn.ensure_connection(max_retries=0)
