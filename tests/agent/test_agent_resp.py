"""Covers fabricweb/agent/resp.py.

The agent's own connection to the broker: every URL REDIS_URL takes, Redis's replies read as redis-py reads them,
an error reply said in the broker's words, a wrong password refused with the connection closed, and a broker gone
said and reached again at the next command. Against real redis-servers (TLS and ACL users:
tests/agent/test_agent_credentials.py, test_agent_broker_acl.py, which run the agent itself).
"""

from __future__ import annotations

import socket
import ssl

import pytest
import redis

from fabricweb.agent.resp import Address, BrokerError, BrokerLost, Connection, encode
from harness import free_port, running_redis, start_redis
from tests.e2e.e2e_harness import leased_redis_db


def test_it_reads_every_url_redis_url_takes():
    a = Address("redis://node.cn001:p%40ss%3Aw@broker:6380/3")
    assert (a.username, a.password, a.host, a.port, a.db, a.path, a.tls) == (
        "node.cn001",
        "p@ss:w",
        "broker",
        6380,
        3,
        None,
        None,
    )
    plain = Address("redis://broker")
    assert (plain.username, plain.password, plain.port, plain.db) == (None, None, 6379, 0)
    local = Address("unix://:secret@/run/redis/redis.sock?db=2")
    assert (local.path, local.password, local.db, local.host) == ("/run/redis/redis.sock", "secret", 2, None)
    assert str(local) == "/run/redis/redis.sock" and str(plain) == "broker:6379"
    checked = Address("rediss://broker:6380/0")
    assert checked.tls.verify_mode == ssl.CERT_REQUIRED and checked.tls.check_hostname
    # Only where the URL says so, as fabricweb/brokertls.py's rule has it.
    unchecked = Address("rediss://broker:6380/0?ssl_cert_reqs=none")
    assert unchecked.tls.verify_mode == ssl.CERT_NONE and not unchecked.tls.check_hostname


def test_it_writes_a_command_as_resps_bulk_strings():
    assert (
        encode(("LPUSH", "snapshots", b"a\r\nb", 7))
        == b"*4\r\n$5\r\nLPUSH\r\n$9\r\nsnapshots\r\n$4\r\na\r\nb\r\n$1\r\n7\r\n"
    )


def test_it_reads_each_kind_of_reply_from_a_real_redis():
    with leased_redis_db() as url:
        conn = Connection(Address(url), 5.0, 5.0)
        try:
            assert conn.command("PING") == b"PONG"
            # A broker gone silent is found by the kernel's probes, not by the agent waking: about a minute.
            sock = conn._sock
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            keepalive = [sock.getsockopt(socket.IPPROTO_TCP, o) for o in (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL)]
            assert keepalive == [30, 10] and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3
            value = b'{"body": "\xc3\xa9\r\n"}'  # UTF-8 and a line break inside a value
            assert conn.command("LPUSH", "node.cn001", value) == 1
            assert conn.command("BRPOP", "node.cn002", "node.cn001", 1) == [b"node.cn001", value]
            assert conn.command("BRPOP", "node.cn001", 0.1, timeout_s=5.0) is None  # its wait ran out
            assert conn.command("GET", "nothing-here") is None
            with pytest.raises(BrokerError, match=r"^ERR unknown command 'NOSUCH'"):
                conn.command("NOSUCH")
            assert conn.command("PING") == b"PONG"  # an error reply leaves the connection usable
            assert redis.Redis.from_url(url).llen("node.cn001") == 0
        finally:
            conn.close()


def test_a_wrong_password_is_refused_in_the_brokers_words_and_the_connection_closed():
    port = free_port()
    with running_redis("--requirepass", "right", port=port, url=f"redis://:right@127.0.0.1:{port}/0") as server:
        conn = Connection(Address(f"redis://:wrong@127.0.0.1:{server.port}/1"), 5.0, 5.0)
        with pytest.raises(BrokerError, match="WRONGPASS"):
            conn.command("PING")
        assert conn._sock is None
        good = Connection(Address(f"redis://:right@127.0.0.1:{server.port}/1"), 5.0, 5.0)
        assert good.command("LPUSH", "q", "x") == 1
        assert redis.Redis(port=server.port, password="right", db=1).llen("q") == 1  # SELECT 1 took
        good.close()


def test_a_broker_gone_is_said_and_reached_again_at_the_next_command(tmp_path):
    server = start_redis("--unixsocket", str(tmp_path / "redis.sock"), "--unixsocketperm", "700")
    try:
        conn = Connection(Address(f"unix://{tmp_path / 'redis.sock'}?db=0"), 5.0, 5.0)
        assert conn.command("PING") == b"PONG"
        server.stop()
        with pytest.raises(BrokerLost, match=f"{tmp_path / 'redis.sock'}"):
            conn.command("PING")
        with pytest.raises(BrokerLost, match="cannot connect to"):
            conn.command("PING")
        server = start_redis("--unixsocket", str(tmp_path / "redis.sock"), "--unixsocketperm", "700", port=server.port)
        assert conn.command("PING") == b"PONG"
        conn.close()
    finally:
        server.stop()
