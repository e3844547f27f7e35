"""Covers fabricweb/sqlitedb/base.py.

Logins on SQLite while a writer holds the write lock batch after batch, as ingest does under load: with
fabricweb.sqlitedb (a waiting connection tries every millisecond, not SQLite's every 100 ms) every login
gets through the gaps; before, they waited out the 20 s timeout and failed with "database is locked"."""

from __future__ import annotations

import http.cookiejar
import re
import sqlite3
import threading
import time
import urllib.parse
import urllib.request

import pytest

from tests.dashboard.webserver_support import PASSWORD, make_superuser, served_copy

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the file copy must hold them
LOGINS = 6
HOLD_S = 0.05  # one ingest batch's transaction
GAP_S = 0.001  # between batches: ingest reads the next from the broker


def writer(db, stop: threading.Event, batches: list[int]) -> None:
    """Write transactions back to back, each holding the lock HOLD_S, as ingest stores batches."""
    conn = sqlite3.connect(db, timeout=20, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS load_batches (n INTEGER)")
    while not stop.is_set():
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO load_batches VALUES (?)", (len(batches),))
        time.sleep(HOLD_S)
        conn.execute("COMMIT")
        batches.append(1)
        time.sleep(GAP_S)
    conn.close()


def log_in(base: str, user: str) -> tuple[int, str, float]:
    """(status, where it went, seconds) of one login through the form, as a browser does."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"{base}/login/", timeout=60).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)[1]
    body = urllib.parse.urlencode({"username": user, "password": PASSWORD, "csrfmiddlewaretoken": token}).encode()
    started = time.monotonic()
    try:
        response = opener.open(urllib.request.Request(f"{base}/login/", body, headers={"Referer": base}), timeout=60)
        return response.status, urllib.parse.urlsplit(response.url).path, time.monotonic() - started
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[-300:], time.monotonic() - started


def test_logins_get_through_while_a_writer_holds_the_lock_batch_after_batch(tmp_path):
    users = [f"user{i}" for i in range(LOGINS)]
    for user in users:
        make_superuser(user)
    with served_copy(tmp_path) as (base, db):
        stop, batches = threading.Event(), []
        load = threading.Thread(target=writer, args=(db, stop, batches))
        load.start()
        results: list[tuple[int, str, float]] = []
        try:
            time.sleep(0.3)  # the writer is in its stride
            threads = [threading.Thread(target=lambda u=u: results.append(log_in(base, u))) for u in users]
            for t in threads:
                t.start()
            for t in threads:
                t.join(90)
        finally:
            stop.set()
            load.join(30)
        log = (tmp_path / "web.log").read_text()
    assert "database is locked" not in log, results
    assert sorted((status, path) for status, path, _ in results) == [(200, "/")] * LOGINS, results
    assert len(batches) > 10  # the writer kept writing meanwhile
    # Each login also costs a million PBKDF2 rounds, six at once on a machine the other test workers share:
    # the bound is against SQLite's own 20 s wait, not the hashing.
    assert max(seconds for *_, seconds in results) < 10, results
