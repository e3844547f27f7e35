"""The process helpers that tests, benches and scripts share: a free loopback port and whether a server listens
on one, waiting until something is ready, stopping a process, and a private redis-server.

Not product code, and not shipped (pyproject.toml packages collectors and fabricweb only): it sits at the top
of the repository so that tests (pytest's pythonpath), bench/ and scripts/ (which put the repository on
sys.path) import it alike, as `from harness import ...`. runfabric supervises its own children
(fabricweb/runfabric/children.py): that is the product's, with its own logs and stop order.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A loopback TCP port free right now (the kernel's choice), for a server the caller starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listens(port: int) -> bool:
    """Whether something accepts connections on loopback `port` now."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def stop(proc: subprocess.Popen | None, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
    """Sends `sig` to `proc` if it still runs, kills it if it has not ended `timeout` seconds later, and reaps it:
    its exit status (None for no process)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def wait_for(
    what: str,
    check: Callable[[], T],
    timeout: float = 10.0,
    every: float = 0.05,
    *,
    watch: Sequence[subprocess.Popen] = (),
    log: Callable[[], str] | None = None,
) -> T:
    """Calls `check` every `every` seconds until it returns something true, and returns that.

    AssertionError naming `what` after `timeout` seconds, or at once when a process in `watch` has exited
    (it never will be ready); `log()`, the processes' output, is added to the message either way.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        exited = next((p for p in watch if p.poll() is not None), None)
        if exited is not None or time.monotonic() > deadline:
            why = f"{_name(exited)} exited ({exited.returncode}) before" if exited else f"not within {timeout:g} s"
            raise AssertionError(f"{why}: {what}" + (f"\n{log()}" if log else ""))
        time.sleep(every)


def _name(proc: subprocess.Popen) -> str:
    """The program and its first arguments, as a reader knows it: `python manage.py ingest`, `redis-server --port 5`."""
    args = [str(a) for a in proc.args] if isinstance(proc.args, list | tuple) else [str(proc.args)]
    return " ".join([Path(args[0]).name, *args[1:3]])


@dataclass
class RedisServer:
    """A redis-server this process started on a loopback port."""

    proc: subprocess.Popen
    port: int
    url: str

    def stop(self) -> None:
        stop(self.proc)


def start_redis(
    *options: str,
    port: int | None = None,
    cwd: Path | str | None = None,
    output: int | IO[Any] = subprocess.DEVNULL,
    url: str | None = None,
    timeout: float = 10.0,
    **client: Any,
) -> RedisServer:
    """A private redis-server on loopback `port` (a free one if None) that persists nothing, once it answers a PING.

    `options` come after the defaults and win over them (`--appendonly yes`, `--aclfile F`, `--port 0
    --tls-port N`); `output` takes its stdout and stderr. The PING goes to `url` (redis://127.0.0.1:PORT/0 by
    default) with redis-py's `client` options (ssl_ca_certs=...). Fails at once when the server exits (it refused
    an option), or after `timeout`.
    """
    import redis  # a product dependency; imported here so a bench that never starts Redis does not load it

    port = free_port() if port is None else port
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *options]
    proc = subprocess.Popen(argv, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
    url = url or f"redis://127.0.0.1:{port}/0"
    ping = redis.Redis.from_url(url, socket_timeout=1, **client)

    def answers() -> bool:
        with contextlib.suppress(redis.RedisError):  # refused, or BusyLoadingError while it reads its data
            return bool(ping.ping())
        return False

    try:
        wait_for(f"redis-server on port {port} answering", answers, timeout, watch=[proc])
    except BaseException:
        stop(proc, 0, signal.SIGKILL)
        raise
    finally:
        ping.close()
    return RedisServer(proc, port, url)


@contextlib.contextmanager
def running_redis(*options: str, **kwargs: Any) -> Iterator[RedisServer]:
    """start_redis(...) for the length of a with block: stopped on leaving it."""
    server = start_redis(*options, **kwargs)
    try:
        yield server
    finally:
        server.stop()
