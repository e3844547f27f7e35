"""Loopback servers for tests: one that never answers, and a redis-server with an ACL file (harness.py has the
free port and the plain redis-server these build on)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from harness import running_redis


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
    with running_redis("--aclfile", str(acl), "--loglevel", "warning", *options, cwd=directory) as server:
        yield f"127.0.0.1:{server.port}", server.url
