"""The agent's connection to the broker: Redis's protocol (RESP2) for the few commands it sends. Standard library.

The agent sends AUTH, SELECT and PING as it connects, then BRPOP (a poll) and LPUSH (a snapshot), nothing else.
redis-py does this too, but `import redis` loads its asyncio client, cluster, sentinel, observability and every
command's method (10 MB of the agent's 47, 0.3 s of its start-up), and each command goes through its retry,
connection pool, event dispatch and metrics recorder: on a node whose caches the jobs emptied since the last
poll, that is code the poll pays to touch (docs/agent.md). Here a command is one write and the reply's lines.

URLs as REDIS_URL gives them: redis://[user[:password]@]host[:port][/db], rediss:// (TLS, the certificate
checked by fabricweb/brokertls.py's rule: against FABRIC_REDIS_CA_FILE or the system's CAs, host name included;
`?ssl_cert_reqs=none` turns that off), unix://[user[:password]@]/path[?db=N].
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from urllib.parse import parse_qs, unquote, urlsplit

from fabricweb.brokertls import ssl_context

DEFAULT_PORT = 6379
# TCP keepalive: a probe after this long idle, then every KEEPALIVE_INTERVAL_S, the connection dropped after
# KEEPALIVE_PROBES unanswered. The kernel sends them: a process waiting in BRPOP is not woken by them.
KEEPALIVE_IDLE_S = 30
KEEPALIVE_INTERVAL_S = 10
KEEPALIVE_PROBES = 3


class BrokerError(Exception):
    """An error reply of the broker (`-ERR ...`, `-NOPERM ...`, `-OOM ...`): its text."""


class BrokerLost(ConnectionError):
    """The connection could not be made, or broke: nothing of a command in flight is known to have run."""


class Address:
    """Where the broker is and how to log in: parsed once from the URL."""

    def __init__(self, url: str, ca_file: str | None = None) -> None:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password is not None else None
        if parts.scheme == "unix":
            self.path, self.host, self.port = parts.path, None, None
            self.db = int(query.get("db", ["0"])[0])
        else:
            self.path, self.host, self.port = None, parts.hostname or "localhost", parts.port or DEFAULT_PORT
            self.db = int(parts.path.strip("/") or 0)
        self.tls: ssl.SSLContext | None = ssl_context(url, ca_file)

    def __str__(self) -> str:
        return self.path or f"{self.host}:{self.port}"


class Connection:
    """One connection, opened at the first command and again after it broke; not shared between threads."""

    def __init__(self, address: Address, timeout_s: float, connect_timeout_s: float) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._sock: socket.socket | None = None
        self._reader = None

    def command(self, *args: str | bytes | int | float, timeout_s: float | None = None):
        """Send one command and return its reply (bytes, int, list, None); BrokerError for an error reply,
        BrokerLost when the connection could not be made or broke (it is closed: the next command opens it)."""
        if self._sock is None:
            self._open()
        try:
            self._sock.settimeout(self.timeout_s if timeout_s is None else timeout_s)
            self._sock.sendall(encode(args))
            return self._reply()
        except (OSError, EOFError) as e:
            self.close()
            raise BrokerLost(f"connection to {self.address} lost: {e or type(e).__name__}") from None

    def close(self) -> None:
        sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _open(self) -> None:
        a = self.address
        try:
            if a.path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.connect_timeout_s)
                sock.connect(a.path)
            else:
                sock = socket.create_connection((a.host, a.port), timeout=self.connect_timeout_s)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                # A broker gone without a word (a half-open connection) is found by the kernel, not by a wake-up.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE_S)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL_S)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_PROBES)
                if a.tls is not None:
                    sock = a.tls.wrap_socket(sock, server_hostname=a.host)
        except OSError as e:
            raise BrokerLost(f"cannot connect to {a}: {e}") from None
        self._sock, self._reader = sock, sock.makefile("rb")
        try:
            if a.password is not None:
                self.command("AUTH", *((a.username,) if a.username else ()), a.password)
            if a.db:
                self.command("SELECT", a.db)
        except BrokerError:  # (a wrong password): not left half logged in
            self.close()
            raise

    def _reply(self):
        line = self._reader.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("the broker closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise BrokerError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._reader.read(size + 2)
            if len(data) != size + 2:
                raise EOFError("the broker closed the connection")
            return data[:-2]
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise EOFError(f"not Redis's protocol: {line[:40]!r}")


def encode(args) -> bytes:
    """A command as RESP's array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)
