"""The e2e harness: subprocesses in their own process groups, leased Redis databases, throwaway databases.

Used by conftest.py's `fabric` fixture and by the tests that start processes of their own.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dj_database_url
import pytest
import redis

from fabricweb.nodeauth import node_key
from harness import wait_for

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTERVAL = 1.0  # FABRIC_POLL_INTERVAL: short, so the suite sees many polls
NODES = 6
# Windows that fit a test run (the rules themselves are tested with simulated time in tests/health*):
# symbol errors judged per poll only, congestion over the last 3 s (at the default xmit_wait tick),
# a link stable for 3 s has stopped flapping.
THRESHOLDS = '{"symbol_errors_per_hour": 1000000, "congestion_window_s": 3, "flapping_quiet_s": 3}'
SECRET = "e2e-only-secret-" + "x" * 40
# Node keys are derived from it (fabricweb/nodeauth.py): every fabric runs with node auth required.
NODE_KEY_SECRET = "e2e-only-node-key-secret-" + "n" * 40
T = TypeVar("T")
CHROMIUM = "/usr/bin/chromium"  # Debian's, driven by Playwright (never `playwright install`)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_S = 60.0
STOP_S = 30.0
# What the test process has that the fabric's processes must not inherit.
TEST_ONLY_ENV = ("DJANGO_SETTINGS_MODULE", "TEST_POSTGRES_URL", "TEST_REDIS_URL", "DATABASE_URL", "SECRET_KEY")


def _required(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        message = f'{var} is not set: run `eval "$(scripts/test-services start)"` first'
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return value


@contextlib.contextmanager
def leased_redis_db():
    """A Redis database number of the test Redis that no other run uses meanwhile, empty."""
    base = _required("TEST_REDIS_URL")
    leases = redis.Redis.from_url(base)
    owner = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
    number = next((n for n in range(1, 16) if leases.set(f"fabricweb-e2e:lease:{n}", owner, nx=True, ex=900)), None)
    if number is None:
        pytest.fail("all 15 Redis databases of the test Redis are leased by other e2e runs")
    url = f"{base.rsplit('/', 1)[0]}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        leases.delete(f"fabricweb-e2e:lease:{number}")


@contextlib.contextmanager
def fresh_database(backend: str, tmp: Path, migrated: bool = False):
    """The URL of a database for one fabric, dropped afterwards: empty, or for SQLite (`migrated`) a copy of
    one with every migration applied, on which runfabric's own `migrate` finds nothing to do (half the CPU)."""
    if backend == "sqlite":
        path = tmp / "fabric.sqlite3"
        if migrated:
            shutil.copyfile(_migrated_sqlite(), path)
        yield f"sqlite:///{path}"
        return
    assert not migrated, "a migrated copy is made for SQLite only"
    import psycopg

    base = _required("TEST_POSTGRES_URL")
    name = f"fabricweb_e2e_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@functools.cache
def _migrated_sqlite() -> str:
    """A SQLite file of this process with every migration applied, made at its first use, removed at exit."""
    scratch = tempfile.mkdtemp(prefix="fabricweb-e2e-migrated-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    path = os.path.join(scratch, "migrated.sqlite3")
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    env = clean_env(DATABASE_URL=f"sqlite:///{path}", SECRET_KEY=SECRET)
    done = subprocess.run(migrate, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not os.path.exists(f"{path}-wal"), "migrate left a write-ahead log: the copy would miss its pages"
    return path


@contextlib.contextmanager
def database_alias(alias: str, url: str):
    """Make `url` reachable in this process as connections[alias] (Model.objects.using(alias))."""
    from django.db import connections

    config = dj_database_url.parse(url)
    if config["ENGINE"].endswith("sqlite3"):
        config["OPTIONS"] = {"timeout": 20}  # the workers write while the test reads
    connections.settings[alias] = connections.configure_settings({"default": dict(config), alias: config})[alias]
    try:
        yield alias
    finally:
        connections[alias].close()
        del connections[alias]
        del connections.settings[alias]


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


class Process:
    """A subprocess in a process group of its own, its output in a log file."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, process_group=0
            )
        self.seen: set[int] = set()

    def watch(self) -> None:
        """Remember the processes it started, to check after it stops that none outlived it."""
        if self.proc.poll() is None:
            self.seen |= descendants(self.proc.pid)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_S) -> int:
        self.watch()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise AssertionError(f"{self.proc.args[:4]} did not stop in {timeout:g} s\n{self.tail()}") from None

    def kill_all(self) -> None:
        for pid in alive(self.seen | {self.proc.pid}):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)

    def tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_for(self, what: str, check: Callable[[], T], timeout: float = 30.0) -> T:
        """harness.wait_for, failing at once if this process exits first; the log's tail in the message."""
        return wait_for(what, check, timeout, watch=[self.proc], log=self.tail)


@contextlib.contextmanager
def chromium_browser():
    """Debian's Chromium under Playwright, headless, for one module's pages."""
    from playwright import sync_api

    # Playwright's sync API runs an event loop in this thread; the ORM reads here are plain sync code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY_ENV}
    return {**env, **extra}


class RunningFabric:
    """A fabric started by runfabric; the test's window on it (database alias, Redis, logs)."""

    def __init__(
        self,
        tmp: Path,
        db: str,
        db_url: str,
        redis_url: str | None,
        options: list[str],
        sim_dir: Path | None = None,
        **env: str,
    ) -> None:
        """`redis_url` None: runfabric is given --start-redis in `options` and starts its own."""
        self.tmp, self.db, self.redis_url = tmp, db, redis_url
        self.sim_dir = sim_dir or tmp / "sim"
        self.redis = redis.Redis.from_url(redis_url) if redis_url else None
        self.env = clean_env(
            DATABASE_URL=db_url, SECRET_KEY=SECRET, FABRIC_THRESHOLDS=THRESHOLDS, FABRIC_NODE_KEY_SECRET=NODE_KEY_SECRET
        )
        self.env.pop("REDIS_URL", None)
        if redis_url:
            self.env["REDIS_URL"] = redis_url
        self.env.update(env)
        argv = [sys.executable, "-m", "fabricweb.runfabric", "--sim-dir", str(self.sim_dir), *options]
        argv += ["--interval", f"{INTERVAL:g}", "--log-level", "INFO"]
        self.runner = Process(argv, self.env, tmp / "runfabric.log")
        self.agents: list[Process] = []

    def wait(self, what: str, check: Callable[[], object], timeout: float) -> object:
        """Poll `check` until it returns something true; fail with `what` and the logs after `timeout`.

        A database error counts as not yet (the tables appear when runfabric's migrations finish).
        """
        from django.db import DatabaseError

        last_error = ""

        def ready() -> object:
            nonlocal last_error
            self.runner.watch()
            try:
                return check()
            except DatabaseError as e:
                last_error = f"(last database error: {e})\n"
                return None

        return wait_for(what, ready, timeout, 0.2, watch=[self.runner.proc], log=lambda: last_error + self.tail())

    def manage(self, *args: str) -> str:
        """`manage.py ARGS` against this fabric's database and settings; its output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], env=self.env, cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start_agent(self, name: str, sysfs_root: Path, *python: str, key: str | None = None) -> Process:
        """A node agent as on a compute node: the broker URL, its tree and its node key (or `key`), no database;
        `python`: the interpreter's own options (`-X importtime`: every module it imports, said in its log)."""
        env = clean_env(REDIS_URL=self.redis_url, FABRIC_NODE_NAME=name, FABRIC_SYSFS_ROOT=str(sysfs_root))
        env["FABRIC_NODE_KEY"] = key or node_key(NODE_KEY_SECRET, name)
        env.pop("FABRIC_SIM_DIR", None)
        agent = Process([sys.executable, *python, "-m", "fabricweb.agent"], env, self.tmp / f"agent-{name}.log")
        self.agents.append(agent)
        return agent

    def tail(self) -> str:
        parts = [f"--- runfabric ---\n{self.runner.tail()}"]
        parts += [f"--- {a.log.name} ---\n{a.tail(30)}" for a in self.agents]
        return "\n".join(parts)

    def stop(self, expect_status: int = 0) -> None:
        """Stop runfabric (if still running) and check it stopped everything it started."""
        problems = []
        for agent in self.agents:
            with contextlib.suppress(AssertionError):
                agent.stop()
        try:
            status = self.runner.stop()
            if status != expect_status:
                problems.append(f"runfabric exited with {status}, not {expect_status}")
        except AssertionError as e:
            problems.append(str(e))
        left = alive(self.runner.seen | {p for a in self.agents for p in a.seen})
        if left:
            self.runner.kill_all()
            problems.append(f"processes left running after runfabric stopped: {sorted(left)}")
        assert not problems, "\n".join(problems) + "\n" + self.tail()
