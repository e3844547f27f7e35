"""Loopback ports for the servers tests start: a free one, and one that never answers."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


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
