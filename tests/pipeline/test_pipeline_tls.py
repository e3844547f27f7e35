"""rediss:// checks the broker's certificate, against a real redis-server speaking TLS with a throwaway CA."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest
import redis
from kombu import Connection

from fabricweb.brokertls import celery_ssl_options, redis_py_options
from harness import free_port, running_redis


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    """(url, ca file): a private redis-server on a loopback TLS port, its certificate signed by a throwaway CA."""
    tmp = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=tmp)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "redis.key", "-out", "redis.csr", cwd=tmp)  # fmt: skip
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "san.ext", "-out", "redis.crt", cwd=tmp)  # fmt: skip
    port = free_port()
    url, ca = f"rediss://127.0.0.1:{port}/0", str(tmp / "ca.crt")
    tls = ["--port", "0", "--tls-port", str(port), "--tls-cert-file", "redis.crt", "--tls-key-file", "redis.key",
           "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no", "--loglevel", "warning"]  # fmt: skip
    with running_redis(*tls, cwd=tmp, url=url, ssl_ca_certs=ca):
        yield url, ca


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
