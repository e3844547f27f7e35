"""A real web server on a copy of the test database: `manage.py runserver` (threaded, the production
settings with DEBUG on: plain HTTP) on a SQLite file VACUUMed from the test's committed rows."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection

from harness import free_port
from tests.e2e.e2e_harness import Process, clean_env

PASSWORD = "web-server-test-password"


@functools.cache
def server_password() -> str:
    """PASSWORD stored with the hasher the server runs (the tests' own is MD5, which it would not accept).
    Hashed once per process: a million PBKDF2 rounds cost about half a second of CPU each time."""
    return PBKDF2PasswordHasher().encode(PASSWORD, "webservertestsalt")


def make_superuser(name: str) -> None:
    get_user_model().objects.create(username=name, password=server_password(), is_staff=True, is_superuser=True)


@contextlib.contextmanager
def served_copy(tmp: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """(base URL, the server's SQLite file). Needs a transactional test: the copy holds committed rows only."""
    db = tmp / "web.sqlite3"
    with connection.cursor() as cursor:
        cursor.execute("VACUUM INTO %s", [str(db)])
    port = free_port()
    environ = clean_env(DATABASE_URL=f"sqlite:///{db}", DEBUG="1", **env)
    argv = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    web = Process(argv, environ, tmp / "web.log")
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=2).close()
                break
            except OSError:
                assert web.proc.poll() is None and time.monotonic() < deadline, f"runserver did not start\n{web.tail()}"
                time.sleep(0.2)
        yield base, db
    finally:
        web.stop()


def watched_page(browser, errors: list[str], **context_options):
    """A page of a new browser context whose console errors and uncaught exceptions go to `errors`."""
    page = browser.new_context(**context_options).new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page


def log_in(page, base: str, user: str) -> None:
    """Through the login form, as a person does; lands on the overview."""
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
