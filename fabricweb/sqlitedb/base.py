"""Django's SQLite backend, but a connection waiting for the write lock tries again every millisecond.

SQLite has one writer at a time. A connection that finds the lock taken waits in SQLite's busy
handler, which tries at 1, 2, 5, 10 ... ms and then only every 100 ms. Ingest holds the lock for a
batch and takes it again a few milliseconds after its commit, so a login trying every 100 ms
almost never lands in that gap: under load it waited out the whole timeout and failed with
"database is locked", while ingest went on. Here SQLite waits 1 ms and this loop tries
again every millisecond until OPTIONS["timeout"] (seconds) has passed, so a waiting request
takes the lock in the first gap.

Tried again only where that is safe: a statement outside a transaction, BEGIN among them
(SQLite undid it whole), and COMMIT (a busy COMMIT leaves the transaction open to commit again).
"""

from __future__ import annotations

import sqlite3
import time

from django.db.backends.sqlite3 import base
from django.db.utils import OperationalError

SQLITE_WAIT_S = 0.001  # SQLite's own busy wait per try
RETRY_S = 0.001  # between tries
DEFAULT_WAIT_S = 5.0  # sqlite3.connect's default timeout


def _busy(error: BaseException) -> bool:
    cause = error.__cause__ if isinstance(error, OperationalError) else error
    code = getattr(cause, "sqlite_errorcode", None)
    return isinstance(cause, sqlite3.OperationalError) and code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


def patiently(wait_s: float, try_once, *args, retry_in_transaction: bool = False, connection=None):
    """try_once(*args), again while SQLite answers busy (outside a transaction), for up to wait_s."""
    deadline = None
    while True:
        was_in_transaction = connection is not None and connection.in_transaction
        try:
            return try_once(*args)
        except (sqlite3.OperationalError, OperationalError) as e:
            if not _busy(e) or (was_in_transaction and not retry_in_transaction):
                raise
            now = time.monotonic()
            deadline = deadline or now + wait_s
            if now >= deadline:
                raise
            time.sleep(RETRY_S)


class PatientCursor(base.SQLiteCursorWrapper):
    wait_s = DEFAULT_WAIT_S

    def execute(self, query, params=None):
        return patiently(self.wait_s, super().execute, query, params, connection=self.connection)

    def executemany(self, query, param_list):
        param_list = list(param_list)  # a generator is used up by the first try
        return patiently(self.wait_s, super().executemany, query, param_list, connection=self.connection)


class DatabaseWrapper(base.DatabaseWrapper):
    wait_s = DEFAULT_WAIT_S

    def get_connection_params(self):
        kwargs = super().get_connection_params()
        self.wait_s = float(kwargs.get("timeout", DEFAULT_WAIT_S))
        kwargs["timeout"] = SQLITE_WAIT_S
        return kwargs

    def get_new_connection(self, conn_params):
        # The init commands (PRAGMA journal_mode=WAL) may find the database busy too.
        return patiently(self.wait_s, super().get_new_connection, conn_params)

    def create_cursor(self, name=None):
        cursor = self.connection.cursor(factory=PatientCursor)
        cursor.wait_s = self.wait_s
        return cursor

    def _commit(self):
        return patiently(self.wait_s, super()._commit, retry_in_transaction=True)
