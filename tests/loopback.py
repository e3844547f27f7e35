"""Loopback ports for the servers tests start: a free one, and one that never answers."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    """A loopback TCP port free right now (the kernel's choice), for a server a test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A loopback port whose connections the kernel accepts and nobody ever answers: a hung broker."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


@contextlib.contextmanager
def redis_with_acl(directory: Path, acl_lines: str, *options: str) -> Iterator[tuple[str, str]]:
    """A private redis-server whose ACL file is `acl_lines` after a central `default` user that may do
    anything, with redis-server's `options` (e.g. --maxmemory 32mb): (host:port, that user's URL). Stopped on exit."""
    acl = directory / "users.acl"
    acl.write_text(f"user default on nopass ~* &* +@all\n{acl_lines}")
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--aclfile", str(acl), "--loglevel", "warning", *options],
        cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis.from_url(url, socket_timeout=1).ping():
                    break
            assert server.poll() is None, "redis-server refused the ACL file"
            assert time.monotonic() < deadline, "redis-server did not answer"
            time.sleep(0.05)
        yield f"127.0.0.1:{port}", url
    finally:
        server.terminate()
        server.wait(10)
